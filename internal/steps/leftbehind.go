package steps

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/podstep/podstep/internal/volume"
)

// LeftBehind is what this run made and has not removed (yet): what a
// teardown that failed or was abandoned leaves behind, for `podstep
// cleanup` to remove.
type LeftBehind struct {
	// Sandbox is the pod sandbox's ID.
	Sandbox string `json:"sandbox,omitempty"`
	// Containers are "<name> <id>", one per container instance.
	Containers []string `json:"containers,omitempty"`
	// Dirs are the pod dir and the pod log dir.
	Dirs []string `json:"dirs,omitempty"`
	// Mounts are the volume mounts still mounted in the pod dir.
	Mounts []string `json:"mounts,omitempty"`
}

// Empty reports whether nothing is left.
func (l LeftBehind) Empty() bool {
	return l.Sandbox == "" && len(l.Containers) == 0 && len(l.Dirs) == 0 && len(l.Mounts) == 0
}

// String lists what is left on one line: "sandbox 0df918e24dc7e,
// container app 3ef54c80a98d1, dir /var/lib/podstep/pods/…, mount … (tmpfs)".
func (l LeftBehind) String() string {
	var parts []string
	if l.Sandbox != "" {
		parts = append(parts, "sandbox "+shortID(l.Sandbox))
	}
	for _, c := range l.Containers {
		name, id, _ := strings.Cut(c, " ")
		parts = append(parts, "container "+name+" "+shortID(id))
	}
	for _, d := range l.Dirs {
		parts = append(parts, "dir "+d)
	}
	for _, m := range l.Mounts {
		parts = append(parts, "mount "+m)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// LeftBehind returns what this run made that is not known to be removed. It
// may be called while a step runs (a second Ctrl-C abandons teardown).
func (e *Engine) LeftBehind() LeftBehind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var l LeftBehind
	if e.rt.sandboxID != "" && !e.rt.sandboxGone {
		l.Sandbox = e.rt.sandboxID
	}
	for _, in := range e.createdLocked() {
		if !e.rt.removed[in.id] {
			l.Containers = append(l.Containers, in.c.spec.Name+" "+in.id)
		}
	}
	if e.rt.dirsCreated && !e.rt.dirsRemoved[e.rt.podDir] {
		l.Dirs = append(l.Dirs, e.rt.podDir)
		ms, _ := volume.Mounts(filepath.Join(e.rt.podDir, "volumes"))
		for _, m := range ms {
			if m.Path != filepath.Join(e.rt.podDir, "volumes") {
				l.Mounts = append(l.Mounts, fmt.Sprintf("%s (%s)", m.Path, m.FSType))
			}
		}
	}
	if e.rt.logDir != "" && !e.rt.dirsRemoved[e.rt.logDir] {
		l.Dirs = append(l.Dirs, e.rt.logDir)
	}
	// CSI volumes the driver still has published or staged (a driver's
	// mount may be none the mount table shows, and a staging dir is
	// outside the pod dir): only the driver's NodeUnpublishVolume and
	// NodeUnstageVolume undo them.
	for _, dm := range e.rt.deviceMounts {
		l.Mounts = append(l.Mounts, fmt.Sprintf("%s (%s on %s, a local volume's device: umount it, then rmdir)", dm.Path, dm.FSType, dm.Device))
	}
	for _, v := range e.rt.csiVolumes {
		if v.State.Published {
			l.Mounts = append(l.Mounts, fmt.Sprintf("%s (CSI %s, published: needs NodeUnpublishVolume)", v.TargetPath, v.Driver))
		}
		if v.State.Staged {
			l.Mounts = append(l.Mounts, fmt.Sprintf("%s (CSI %s, staged: needs NodeUnstageVolume)", v.StagingPath, v.Driver))
		}
	}
	return l
}

// containersLeftLocked lists the containers the runtime has not confirmed
// removed; they may still use the pod's volumes. A sandbox removed takes
// its containers with it.
func (e *Engine) containersLeftLocked() []string {
	if e.rt.sandboxGone {
		return nil
	}
	var left []string
	for _, in := range e.createdLocked() {
		if !e.rt.removed[in.id] {
			left = append(left, "container "+in.c.spec.Name+" "+shortID(in.id))
		}
	}
	return left
}
