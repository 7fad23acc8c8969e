package volume

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Mount is one mount below a directory (from /proc/self/mountinfo).
type Mount struct {
	Path   string
	FSType string
}

// Mounts lists the mounts at or below dir, deepest first.
func Mounts(dir string) ([]Mount, error) {
	dir = filepath.Clean(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp != dir && !strings.HasPrefix(mp, dir+"/") {
			continue
		}
		fstype := ""
		for i := 6; i < len(fields)-1; i++ {
			if fields[i] == "-" {
				fstype = fields[i+1]
				break
			}
		}
		out = append(out, Mount{Path: mp, FSType: fstype})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Path) > len(out[j].Path) })
	return out, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isMountPoint reports whether dir is itself a mount point.
func isMountPoint(dir string) (bool, error) {
	ms, err := Mounts(dir)
	if err != nil {
		return false, err
	}
	abs, _ := filepath.Abs(dir)
	for _, m := range ms {
		if m.Path == abs {
			return true, nil
		}
	}
	return false, nil
}

// Teardown unmounts every mount below dir, a pod's volumes dir
// (<root>/pods/<uid>/volumes), deepest first: the tmpfs of emptyDir medium
// Memory, secret, downwardAPI and projected volumes, as the kubelet's
// UnmountVolume.TearDown does before the pod dir is removed. Removing the
// pod dir with a tmpfs still mounted would fail (EBUSY) and leak the mount.
// A missing dir is not an error.
func Teardown(dir string) error {
	_, err := TeardownMounts(dir)
	return err
}

// TeardownMounts is Teardown, returning what it unmounted.
func TeardownMounts(dir string) ([]Mount, error) {
	ms, err := Mounts(dir)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	var done []Mount
	var errs []error
	for _, m := range ms {
		if m.Path == abs {
			continue // never the volumes dir itself
		}
		// A container may still hold it (EBUSY): unmount detaches it then.
		err := unmount(m.Path)
		if err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for %s (%s): %w", m.Path, m.FSType, err))
			continue
		}
		done = append(done, m)
	}
	return done, errors.Join(errs...)
}

// TeardownPod unmounts everything podstep mounted for the pod whose dir is
// podDir (<root>/pods/<uid>), so that the dir can be removed: first the
// subPath bind mounts (CleanSubPaths, as UnmountVolume does before each
// volume's TearDown), then the volumes' tmpfs (TeardownMounts). It fails
// if anything is still mounted below podDir: removing the dir then would
// delete through the mount (a subPath of a hostPath volume is the host's
// own files). It returns what it unmounted. A missing dir is not an error.
func TeardownPod(podDir string) ([]Mount, error) {
	done, err := CleanSubPaths(podDir)
	if err != nil {
		return done, fmt.Errorf("error cleaning subPath mounts: %w", err)
	}
	ms, err := TeardownMounts(filepath.Join(podDir, "volumes"))
	done = append(done, ms...)
	if err != nil {
		return done, err
	}
	left, err := Mounts(podDir)
	if err != nil {
		return done, err
	}
	abs, _ := filepath.Abs(podDir)
	var still []string
	for _, m := range left {
		if m.Path != abs {
			still = append(still, m.Path)
		}
	}
	if len(still) > 0 {
		return done, fmt.Errorf("still mounted below %s, not removing it: %s", podDir, strings.Join(still, ", "))
	}
	return done, nil
}
