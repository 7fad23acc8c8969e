package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/podstep/podstep/internal/volume"
)

// hostProc is the host's PID 1 as a fleet runner sees it: the runner
// shares the host's PID namespace (as `kubectl debug node`'s pods do), so
// PID 1's root and mount table are the host's. Outside a container they
// are this process's.
var hostProc = "/proc/1"

// RemoveHostDirs is a fleet runner's last act (--fleet-host-dir DIR): it
// removes the run's --root-dir (its pods dir first) and --log-dir, then
// their parents up to and including DIR, each only when empty, so that a
// finished or interrupted runner leaves nothing on its node's disk. The
// kubelet made the runner's hostPath dirs (DirectoryOrCreate) and never
// removes them: a hostPath volume's TearDown does nothing
// (pkg/volume/hostpath/host_path.go). Inside the runner those dirs are its
// mount points, which rmdir refuses (EBUSY), so each is removed through
// the host's root, where they are plain dirs. A dir that is a mount point
// on the host is left as it is: an operator's shared mount for
// Bidirectional propagation (docs/fleet.md), which an rmdir from the
// runner's mount namespace would detach. A dir that is not empty (a pod
// dir of a kept or abandoned pod) is left, with its parents, and said on
// stderr; nothing but empty dirs is ever removed.
func (o *Options) RemoveHostDirs(stderr io.Writer) {
	if o.FleetHostDir == "" {
		return
	}
	top := filepath.Clean(o.FleetHostDir)
	seen := map[string]bool{}
	var dirs []string
	for _, d := range []string{filepath.Join(o.RootDir, "pods"), o.RootDir, o.LogDir} {
		for d = filepath.Clean(d); d == top || strings.HasPrefix(d, top+string(filepath.Separator)); d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	// deepest first: a dir's children before it
	sort.SliceStable(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], string(filepath.Separator)) > strings.Count(dirs[j], string(filepath.Separator))
	})
	mounts := hostMounts(top)
	var left []string
	for _, d := range dirs {
		if mounts[d] {
			left = append(left, d)
			continue
		}
		err := removeOnHost(d)
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
		case errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST):
			// its parents stay too: name only the deepest; the host dir is
			// every runner's of the host (nodes sharing one): others' dirs
			// in it are no leftover of this run
			if d != top && !hasUnder(left, d) {
				fmt.Fprintf(stderr, "podstep: left %s on the node: not empty (a kept or abandoned pod's dirs: `podstep cleanup` on the node removes them)\n", d)
			}
			left = append(left, d)
		default:
			fmt.Fprintf(stderr, "podstep: cannot remove %s on the node: %v\n", d, err)
			left = append(left, d)
		}
	}
}

// removeOnHost removes the empty dir d through the host's root, else (no
// access to PID 1's root: not root, no shared PID namespace) as this
// process sees it.
func removeOnHost(d string) error {
	err := os.Remove(filepath.Join(hostProc, "root", d))
	if errors.Is(err, os.ErrPermission) {
		err = os.Remove(d)
	}
	return err
}

// hostMounts are the mount points at or below top in the host's mount
// namespace (PID 1's mountinfo; none when it cannot be read).
func hostMounts(top string) map[string]bool {
	data, err := os.ReadFile(filepath.Join(hostProc, "mountinfo"))
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, mnt := range volume.MountsIn(string(data), top) {
		m[mnt.Path] = true
	}
	return m
}

// hasUnder says whether a dir in dirs is d or under d.
func hasUnder(dirs []string, d string) bool {
	for _, x := range dirs {
		if x == d || strings.HasPrefix(x, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
