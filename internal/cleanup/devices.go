package cleanup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/volume"
)

// DeviceMounts unmounts the block devices of local PersistentVolumes that
// runs with root as their --root-dir mounted (root/plugins/kubernetes.io/
// local-volume/mounts/PV, the local plugin's MountDevice) and that no pod
// dir under root/pods uses any more: a killed run's, whose pod dir
// Orphans removed. A device still bind-mounted into a pod dir (a run still
// going, or a pod kept) is not touched and not listed. root must be one
// only its owner can change (fsperm.Private), as for the pod dirs.
func DeviceMounts(root string) []Dir {
	if root == "" {
		return nil
	}
	base := volume.LocalDeviceMountsDir(root)
	if _, err := os.Lstat(base); err != nil {
		return nil
	}
	if err := fsperm.Private(root, false); err != nil {
		return []Dir{{Path: base, Why: "not looked at: " + err.Error()}}
	}
	table, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []Dir{{Path: base, Why: err.Error()}}
	}
	devs, used := deviceMountsIn(string(table), filepath.Clean(base), filepath.Join(filepath.Clean(root), "pods"))
	var out []Dir
	for _, m := range devs {
		if used[m.dev] {
			continue
		}
		if err := unix.Unmount(m.path, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			out = append(out, Dir{Path: m.path, Why: fmt.Sprintf("a local volume's device mount no pod uses: umount: %v", err)})
			continue
		}
		if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			out = append(out, Dir{Path: m.path, Why: fmt.Sprintf("unmounted, but not removed: %v", err)})
			continue
		}
		out = append(out, Dir{Path: m.path, Removed: true, Why: "a local volume's device mount (" + m.fstype + ") no pod uses: unmounted"})
	}
	return out
}

// devMount is a mount of the mount table: its point, its device
// (major:minor) and file system type.
type devMount struct{ path, dev, fstype string }

// deviceMountsIn returns the mounts directly below base in a mountinfo
// table, and the devices (major:minor) mounted anywhere below pods.
func deviceMountsIn(table, base, pods string) ([]devMount, map[string]bool) {
	var devs []devMount
	used := map[string]bool{}
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		dash := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				dash = i
				break
			}
		}
		if dash < 0 || dash+1 >= len(f) {
			continue
		}
		mp := volume.UnescapeMountinfo(f[4])
		switch {
		case filepath.Dir(mp) == base:
			devs = append(devs, devMount{path: mp, dev: f[2], fstype: f[dash+1]})
		case strings.HasPrefix(mp, pods+"/"):
			used[f[2]] = true
		}
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].path < devs[j].path })
	return devs, used
}
