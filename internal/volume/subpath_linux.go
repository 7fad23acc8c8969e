//go:build linux

package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	// nofollowFlags opens a directory without following a symlink
	// (subpath_linux.go nofollowFlags).
	nofollowFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// openFDFlags gets an fd for a path component without following it,
	// whatever its type (subpath_linux.go openFDFlags).
	openFDFlags = unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
)

// beforeSafeOpen, when set (by tests), runs between resolving the subPath's
// symlinks and opening it: where a container racing the kubelet would swap
// a directory for a symlink.
var beforeSafeOpen func(resolved string)

// PrepareSubPath makes one subPath mount safe, as makeMounts
// (pkg/kubelet/kubelet_pods.go) does before generateContainerConfig returns:
//
//  1. A subPath that does not exist is made as a directory inside the volume,
//     with the volume's mode (subpath.SafeMakeDir → doSafeMakeDir): every
//     existing component is opened without following a symlink, and each
//     new directory is made and opened relative to its parent's fd.
//  2. PrepareSafeSubpath → doBindSubPath: the volume path and the subPath
//     are resolved (filepath.EvalSymlinks); the result must stay inside the
//     volume (safeOpenSubPath); it is opened component by component from
//     the volume's root with O_NOFOLLOW (doSafeOpen), and the final fd is
//     bind-mounted, through /proc/self/fd/N, at
//     <pod dir>/volume-subpaths/<volume>/<container>/<index>
//     (prepareSubpathTarget, getSubpathBindTarget). That bind mount is the
//     host_path sent to the runtime: whatever a container does to the
//     volume afterwards, the runtime mounts what was checked.
//
// Without Host.Mount (not root) there is no bind mount: the checks of step
// 2 still run, and the resolved path is sent, with a warning.
//
// The error is a *SubPathError (the kubelet's CreateContainerConfigError
// message) wrapping the cause.
func (h *Host) PrepareSubPath(sp SubPath) (SubPathResult, error) {
	var r SubPathResult
	path := sp.Path()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// makeMounts: "Create the sub path now because if it's auto-created
		// later when referenced, it may have an incorrect ownership and mode."
		st, err := os.Stat(sp.VolumePath)
		if err != nil {
			return r, err
		}
		err = safeMakeDir(sp.SubPath, sp.VolumePath, st.Mode())
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return r, &SubPathError{Create: true, Volume: sp.VolumeName, Container: sp.ContainerName, Err: err}
		}
		r.Created = err == nil
	}
	// An error other than not-exist: the kubelet logs "Could not determine
	// if subPath exists" and goes on to PrepareSafeSubpath.
	if err := h.bindSubPath(sp, &r); err != nil {
		return r, &SubPathError{Volume: sp.VolumeName, Container: sp.ContainerName, Err: err}
	}
	return r, nil
}

// bindSubPath mirrors subpath_linux.go doBindSubPath.
func (h *Host) bindSubPath(sp SubPath, r *SubPathResult) error {
	volumePath, err := filepath.EvalSymlinks(sp.VolumePath)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %q: %v", sp.VolumePath, err)
	}
	path, err := filepath.EvalSymlinks(sp.Path())
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %q: %v", sp.Path(), err)
	}
	r.Source = path
	// safeOpenSubPath
	if !pathWithinBase(path, volumePath) {
		return fmt.Errorf("subpath %q not within volume path %q", path, volumePath)
	}
	if beforeSafeOpen != nil {
		beforeSafeOpen(path)
	}
	fd, err := safeOpen(path, volumePath)
	if err != nil {
		return fmt.Errorf("error opening subpath %v: %v", path, err)
	}
	defer unix.Close(fd)

	target := sp.Target()
	if !h.Mount {
		r.HostPath = path
		r.Warning = fmt.Sprintf("volumeMount %q subPath %q: the kubelet bind-mounts the subPath at %s and sends that path; podstep is not root, so it checked that %s stays inside the volume (opening each component without following symlinks) and sends it as is: a container could still replace a directory on it with a symlink before the runtime mounts it", sp.VolumeName, sp.SubPath, target, path)
		return nil
	}
	reused, err := prepareSubPathTarget(target, fd)
	if err != nil {
		return err
	}
	r.HostPath, r.Bound = target, true
	if reused {
		r.Reused = true
		return nil
	}
	// The kubelet runs `mount --no-canonicalize -o bind /proc/<pid>/fd/<fd>
	// <target>`: the magic link names the inode that was opened, so a
	// symlink swapped in since cannot redirect the mount.
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		if cerr := cleanSubPath(sp); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("error mounting %s: %s", path, err)
	}
	return nil
}

// prepareSubPathTarget mirrors subpath_linux.go prepareSubpathTarget: it
// makes the bind target (a directory for a directory, an empty file for
// anything else) and reports whether the same inode is already mounted
// there (a restarted container). A mount of something else is detached.
// The type comes from the opened fd, not from the path again.
func prepareSubPathTarget(target string, fd int) (bool, error) {
	var src unix.Stat_t
	if err := unix.Fstat(fd, &src); err != nil {
		return false, fmt.Errorf("fstat %s: %w", target, err)
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return false, fmt.Errorf("error checking path %s for mount: %w", target, err)
	}
	if mounted {
		var t unix.Stat_t
		if err := unix.Lstat(target, &t); err != nil {
			return false, fmt.Errorf("lstat %s failed: %s", target, err)
		}
		if t.Dev == src.Dev && t.Ino == src.Ino {
			return true, nil
		}
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			return false, fmt.Errorf("error lazy-unmounting stale subpath mount %s: %w", target, err)
		}
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return false, fmt.Errorf("error creating directory %s: %s", parent, err)
	}
	if src.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("error creating directory %s: %s", target, err)
		}
	} else if err := os.WriteFile(target, nil, 0o640); err != nil {
		return false, fmt.Errorf("error creating file %s: %s", target, err)
	}
	return false, nil
}

// cleanSubPath mirrors subpath_linux.go cleanSubPath: the one bind target
// of a failed doBindSubPath, then its empty parents up to the pod dir.
func cleanSubPath(sp SubPath) error {
	target := sp.Target()
	if _, err := cleanMountPoint(target, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for dir := filepath.Dir(target); dir != sp.PodDir && pathWithinBase(dir, sp.PodDir); dir = filepath.Dir(dir) {
		if err := os.Remove(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, fs.ErrExist) {
				break // not empty
			}
			return fmt.Errorf("error removing directory %q: %v", dir, err)
		}
	}
	return nil
}

// safeOpen mirrors subpath_linux.go doSafeOpen: it opens pathname, which
// must have no symlinks left and be inside base, one component at a time
// with openat(O_NOFOLLOW|O_PATH) from base's fd, and fails on a component
// that is a symlink: a container that swaps a directory for a symlink after
// EvalSymlinks cannot redirect the open. It returns the final fd.
func safeOpen(pathname, base string) (int, error) {
	pathname, base = filepath.Clean(pathname), filepath.Clean(base)
	rel, err := filepath.Rel(base, pathname)
	if err != nil {
		return -1, err
	}
	parent, err := unix.Open(base, nofollowFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot open directory %s: %s", base, err)
	}
	current := base
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		current = filepath.Join(current, seg)
		if !pathWithinBase(current, base) {
			unix.Close(parent)
			return -1, fmt.Errorf("path %s is outside of allowed base %s", current, base)
		}
		// Trigger an automount (a trailing slash does); errors do not matter.
		var st unix.Stat_t
		_ = unix.Fstatat(parent, seg+"/", &st, unix.AT_SYMLINK_NOFOLLOW)
		child, err := unix.Openat(parent, seg, openFDFlags, 0)
		unix.Close(parent)
		if err != nil {
			return -1, fmt.Errorf("cannot open %s: %s", current, err)
		}
		if err := unix.Fstat(child, &st); err != nil {
			unix.Close(child)
			return -1, fmt.Errorf("error running fstat on %s with %v", current, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(child)
			return -1, fmt.Errorf("unexpected symlink found %s", current)
		}
		parent = child
	}
	return parent, nil
}

// safeMakeDir mirrors subpath_linux.go SafeMakeDir → doSafeMakeDir: it
// makes base/subdir (and its missing parents) with perm, but only inside
// base. The existing part is resolved and must stay in base; it is opened
// with safeOpen, and each missing directory is made with mkdirat relative
// to its parent's fd, opened without following a symlink, and chmod'ed to
// perm despite the umask. (The kubelet passes the absolute path to
// Mkdirat, which then ignores the fd; podstep makes it relative to the fd.)
// A subdir that exists as a directory is not an error.
func safeMakeDir(subdir, base string, perm os.FileMode) error {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %s: %s", base, err)
	}
	pathname := filepath.Join(realBase, subdir)
	if !pathWithinBase(pathname, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", pathname, realBase)
	}
	if st, err := os.Stat(pathname); err == nil {
		if st.IsDir() {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: pathname, Err: unix.ENOTDIR}
	}
	existing, toCreate, err := findExistingPrefix(realBase, pathname)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %s", pathname, err)
	}
	fullExisting, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %s", existing, err)
	}
	if !pathWithinBase(fullExisting, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", fullExisting, realBase)
	}
	parent, err := safeOpen(fullExisting, realBase)
	if err != nil {
		return fmt.Errorf("cannot open directory %s: %s", existing, err)
	}
	defer func() { unix.Close(parent) }()
	mode := uint32(perm & os.ModePerm)
	if perm&os.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if perm&os.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if perm&os.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	current := fullExisting
	for _, dir := range toCreate {
		current = filepath.Join(current, dir)
		if err := unix.Mkdirat(parent, dir, mode); err != nil {
			return fmt.Errorf("cannot create directory %s: %w", current, err)
		}
		child, err := unix.Openat(parent, dir, nofollowFlags, 0)
		if err != nil {
			return fmt.Errorf("cannot open %s: %s", current, err)
		}
		unix.Close(parent)
		parent = child
		if err := unix.Fchmod(parent, mode); err != nil {
			return fmt.Errorf("chmod %q failed: %s", current, err)
		}
	}
	return nil
}

// findExistingPrefix mirrors subpath_linux.go findExistingPrefix: the
// longest existing prefix of pathname below base (openat follows symlinks
// here; the caller checks where the prefix resolves to) and the components
// still to make.
func findExistingPrefix(base, pathname string) (string, []string, error) {
	rel, err := filepath.Rel(base, pathname)
	if err != nil {
		return base, nil, err
	}
	dirs := strings.Split(rel, string(filepath.Separator))
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return pathname, nil, fmt.Errorf("error opening %s: %s", base, err)
	}
	defer func() { unix.Close(fd) }()
	current := base
	for i, dir := range dirs {
		// O_PATH: a fifo swapped in cannot hang the open.
		child, err := unix.Openat(fd, dir, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return current, dirs[i:], nil
			}
			return base, nil, err
		}
		unix.Close(fd)
		fd = child
		current = filepath.Join(current, dir)
	}
	return pathname, nil, nil
}
