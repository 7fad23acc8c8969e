package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/reason"
)

// dirsStep mirrors Kubelet.makePodDataDirs (pkg/kubelet/kubelet_pods.go),
// the first thing SyncPod does for a pod it will run.
type dirsStep struct{}

func (dirsStep) mirrors() string {
	return "Kubelet.SyncPod → makePodDataDirs (pkg/kubelet/kubelet.go, kubelet_pods.go)"
}

func (dirsStep) explain() string {
	return "The kubelet makes the pod's data directory under its root dir, pods/<uid>, with volumes/ (where volume plugins put their data) and plugins/. The rest is made later, when each container's config is made: containers/<name>/ for its termination-message file (GenerateRunContainerOptions), and the etc-hosts file (makeMounts)."
}

func (dirsStep) requests(*Engine) []Request { return nil }

func (dirsStep) run(_ context.Context, e *Engine) Result {
	dirs := []string{e.rt.podDir}
	for _, sub := range []string{"volumes", "plugins"} {
		dirs = append(dirs, filepath.Join(e.rt.podDir, sub))
	}
	// The kubelet's MkdirAll would reuse the dir, but podstep creates a
	// new pod: a pod dir with this UID belongs to another run of the same
	// pod (at once, or kept, or left behind), and its volumes must not be
	// touched. Mkdir, not a Stat first: of two runs at once, one wins.
	if err := os.MkdirAll(filepath.Dir(e.rt.podDir), 0o750); err != nil {
		return fail(reason.FailedMakePodDataDirs, err, fmt.Sprintf("cannot make %s", filepath.Dir(e.rt.podDir)))
	}
	if err := os.Mkdir(e.rt.podDir, 0o750); errors.Is(err, os.ErrExist) {
		return fail(reason.PodAlreadyExists, errors.New(heldBy(e.rt.podDir, string(e.pod.UID))), "the pod's data directory already exists")
	} else if err != nil {
		return fail(reason.FailedMakePodDataDirs, err, fmt.Sprintf("cannot make %s", e.rt.podDir))
	}
	e.mu.Lock()
	e.rt.dirsCreated = true // from here teardown removes the pod dir
	e.mu.Unlock()
	// The record that lets `podstep cleanup` remove this dir later.
	if err := mark.Dir(e.rt.podDir, string(e.pod.UID), e.holder()); err != nil {
		return fail(reason.FailedMakePodDataDirs, err, "cannot record the pod dir for podstep cleanup")
	}
	for _, d := range dirs[1:] {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fail(reason.FailedMakePodDataDirs, err, fmt.Sprintf("cannot make %s", d))
		}
	}
	return ok("made "+e.rt.podDir+"/{volumes,plugins}", kv("pod dir", e.rt.podDir))
}

// makeLogDir makes the pod's log dir, as the runtime's RunPodSandbox would
// (containerd makes it too), and records it, when it did not exist, for
// teardown and `podstep cleanup` to remove.
func (e *Engine) makeLogDir(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		e.mu.Lock()
		e.rt.logDir = dir // from here teardown removes it
		e.mu.Unlock()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if e.rt.logDir == dir {
		return mark.Dir(dir, string(e.pod.UID), e.holder())
	}
	return nil
}

// ownPodDir is the pod dir this run made ("" none yet).
func (e *Engine) ownPodDir() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.rt.dirsCreated {
		return ""
	}
	return e.rt.podDir
}

// holder is this process, recorded in the marker of each dir it makes.
func (e *Engine) holder() mark.Holder { return mark.Self(e.opts.Runtime, e.opts.Simulated) }

// heldBy says who holds the existing pod dir of the pod with uid: a podstep
// process still running (two runs of one pod share its UID, hence its dir
// and, on a runtime, its sandbox name), one that ended and left it, or
// something podstep did not make.
func heldBy(dir, uid string) string {
	h, err := mark.ReadHolder(dir)
	for i := 0; i < 5 && (errors.Is(err, os.ErrNotExist) || errors.Is(err, mark.ErrPartial)); i++ {
		// A run at once: its marker follows its Mkdir (and an older
		// podstep wrote it in place, so it may be read half written).
		time.Sleep(20 * time.Millisecond)
		h, err = mark.ReadHolder(dir)
	}
	switch {
	case errors.Is(err, mark.ErrPartial):
		return fmt.Sprintf("%s is being made by another podstep run of this pod (uid %s): its %s marker is not complete yet; wait for that run to end or stop it, give this pod another name or uid, or use another --root-dir", dir, uid, mark.File)
	case err != nil:
		return fmt.Sprintf("%s already exists, and podstep did not record making it (%v): remove it yourself, or give this pod another name or uid", dir, err)
	case h.Alive() && h.PID == os.Getpid():
		return fmt.Sprintf("%s already exists: this podstep process runs another pod with uid %s; give this pod another name or uid", dir, uid)
	case h.Alive():
		return fmt.Sprintf("%s is in use by another podstep run of this pod (uid %s): %s; wait for it to end or stop it, give this pod another name or uid, or use another --root-dir", dir, uid, h)
	case h.PID == 0:
		return fmt.Sprintf("%s already exists: a pod with uid %s was kept by an earlier podstep run (or left behind); remove it with `podstep cleanup`, or give this pod another name or uid", dir, uid)
	}
	how := "`podstep cleanup`"
	if h.Simulated {
		how = "`podstep cleanup` (its simulated runtime ended with it)"
	}
	return fmt.Sprintf("%s already exists: it was left by podstep %s, which has ended (kept with --keep, or not torn down); remove it with %s, or give this pod another name or uid", dir, h, how)
}

// sandboxHolder says who holds a podstep sandbox of this pod already on
// the runtime, from the marker of its pod dir under root (the sandbox's
// root-dir annotation, which may be another --root-dir than this run's).
// own is this run's pod dir ("" not made yet): when the sandbox's root
// names it, the marker read is this run's own, and the sandbox was made by
// no podstep run holding a pod dir (another client with podstep's labels,
// e.g. crictl with the configs of `podstep plan --crictl`).
func sandboxHolder(root, uid, own string) string {
	const how = "remove it with `podstep cleanup`, or give this pod another name or uid"
	if root == "" || !mark.ValidUID(uid) {
		return "kept by an earlier podstep run (or left behind); " + how
	}
	dir := filepath.Join(root, "pods", uid)
	if own != "" && sameDir(dir, own) {
		return "made by another client with podstep's labels (crictl with the configs of `podstep plan --crictl`?) or left by a run whose pod dir is gone, not by a podstep run going on; " + how
	}
	h, err := mark.ReadHolder(dir)
	switch {
	case err != nil || h.PID == 0:
		return "kept by an earlier podstep run (or left behind); " + how
	case h.Alive() && h.PID == os.Getpid():
		return "in use by another podstep run of this pod in this process: " + h.String() + " (pod dir " + dir + "); give this pod another name or uid"
	case h.Alive():
		return "in use by another podstep run of this pod: " + h.String() + "; wait for it to end or stop it, or give this pod another name or uid"
	}
	return "left by podstep " + h.String() + ", which has ended; " + how
}

// sameDir reports whether a and b name one directory (links followed).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
