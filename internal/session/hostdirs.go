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
)

// RemoveHostDirs is a fleet runner's last act (--fleet-host-dir DIR): it
// removes the run's --root-dir (its pods dir first) and --log-dir, then
// their parents below DIR, each only when empty, so that a finished or
// interrupted runner leaves no dir of its own on its node's disk. The
// kubelet never removes a hostPath volume's dirs (its TearDown does
// nothing, pkg/volume/hostpath/host_path.go): the runner's one hostPath
// is DIR, and every dir below it is podstep's to remove. DIR itself stays:
// it is the runner's mount point (rmdir says EBUSY), shared by the runners
// of the nodes on one host. A dir that is not empty (a pod dir of a kept or
// abandoned pod) is left, with its parents, and said on stderr; nothing but
// empty dirs is ever removed.
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
	var left []string
	for _, d := range dirs {
		err := os.Remove(d)
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
		case d == top && (errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)):
			// the runner's mount point, or other nodes' runners' dirs in it
		case errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST):
			// its parents stay too: name only the deepest
			if !hasUnder(left, d) {
				fmt.Fprintf(stderr, "podstep: left %s on the node: not empty (a kept or abandoned pod's dirs: `podstep cleanup` on the node removes them)\n", d)
			}
			left = append(left, d)
		default:
			fmt.Fprintf(stderr, "podstep: cannot remove %s on the node: %v\n", d, err)
			left = append(left, d)
		}
	}
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
