package volume

import (
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
	// One read of the whole table (a few KiB): no scanner buffer to
	// allocate per call, as teardown reads it for every pod.
	data, err := readMountTable()
	if err != nil {
		return nil, err
	}
	out := parseMountinfo(string(data), dir)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Path) > len(out[j].Path) })
	return out, nil
}

// readMountTable reads /proc/self/mountinfo (a variable for the tests,
// which count the reads).
var readMountTable = func() ([]byte, error) { return os.ReadFile("/proc/self/mountinfo") }

// parseMountinfo returns the mounts of a mountinfo table at or below dir
// (absolute, clean), in the table's order. Each line is
//
//	id parent major:minor root mountpoint options [optional...] - fstype source superopts
func parseMountinfo(table, dir string) []Mount {
	var out []Mount
	for line := range strings.Lines(table) {
		n, mp, fstype, dash := 0, "", "", false
		for f := range strings.FieldsSeq(line) {
			if dash {
				fstype = f
				break
			}
			if n == 4 {
				mp = f
			}
			dash = n >= 6 && f == "-"
			n++
		}
		if n < 7 {
			continue // not a mountinfo line
		}
		if !strings.HasPrefix(mp, dir) && !strings.Contains(mp, `\`) {
			continue // most mounts are elsewhere: no unescaping
		}
		mp = UnescapeMountinfo(mp)
		if mp != dir && !strings.HasPrefix(mp, dir+"/") {
			continue
		}
		out = append(out, Mount{Path: mp, FSType: fstype})
	}
	return out
}

// UnescapeMountinfo undoes the kernel's octal escapes (\040 for a space)
// of a path in /proc/self/mountinfo.
func UnescapeMountinfo(s string) string {
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
	return teardownMounts(dir, ms)
}

// teardownMounts unmounts ms (the mounts at or below dir, deepest first)
// but dir itself.
func teardownMounts(dir string, ms []Mount) ([]Mount, error) {
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

// below keeps the mounts of ms at or below dir (absolute, clean).
func below(ms []Mount, dir string) []Mount {
	var out []Mount
	for _, m := range ms {
		if m.Path == dir || strings.HasPrefix(m.Path, dir+"/") {
			out = append(out, m)
		}
	}
	return out
}

// TeardownPod unmounts everything podstep mounted for the pod whose dir is
// podDir (<root>/pods/<uid>), so that the dir can be removed: first the
// subPath bind mounts (CleanSubPaths, as UnmountVolume does before each
// volume's TearDown), then the volumes' tmpfs (TeardownMounts). It fails
// if anything is still mounted below podDir: removing the dir then would
// delete through the mount (a subPath of a hostPath volume is the host's
// own files). It returns what it unmounted. A missing dir is not an error.
//
// It reads the mount table once for the volumes and the final check, and
// again for the check only when it unmounted something: a pod with no
// volume on a tmpfs (most pods) costs one read, not three, which matters
// when many pods are torn down at once (podstep bench --concurrency).
func TeardownPod(podDir string) ([]Mount, error) {
	done, err := CleanSubPaths(podDir)
	if err != nil {
		return done, fmt.Errorf("error cleaning subPath mounts: %w", err)
	}
	abs, err := filepath.Abs(filepath.Clean(podDir))
	if err != nil {
		return done, err
	}
	left, err := Mounts(abs)
	if err != nil {
		return done, err
	}
	volumes := filepath.Join(abs, "volumes")
	ms, err := teardownMounts(volumes, below(left, volumes))
	done = append(done, ms...)
	if err != nil {
		return done, err
	}
	if len(ms) > 0 {
		if left, err = Mounts(abs); err != nil {
			return done, err
		}
	}
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
