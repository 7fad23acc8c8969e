//go:build unix

package fsperm

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxSocketPath is the longest unix socket path Linux takes
// (sockaddr_un.sun_path is 108 bytes with its trailing NUL).
const MaxSocketPath = 107

// ListenUnix listens on the unix socket path with mode perm and, when
// gid >= 0, that group, whatever the umask. The socket is bound in a
// directory of its own that ListenUnix makes beside path (mode 0700,
// checked after it is made: a real directory, podstep's, no one else's
// access), given its mode and group there, where no other user can reach
// it, and renamed to path: it is never reachable under the umask's mode.
// Whatever is at path is replaced: the caller decides first whether it
// may be (a stale socket), and path's directory must be one no one else
// can write to (Private; MkdirAll makes one).
func ListenUnix(path string, perm fs.FileMode, gid int) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	tmp, err := os.MkdirTemp(dir, ".s") // short: unix socket paths
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(tmp) }() // empty once renamed, or failed
	fi, err := os.Lstat(tmp)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() || owner(fi) != uid() || fi.Mode().Perm()&0o077 != 0 {
		return nil, &UnsafeError{Path: tmp, Why: fmt.Sprintf("is not the private directory podstep just made (mode %v, uid %d)", fi.Mode(), owner(fi)),
			Want: "a directory of mode 0700 owned by podstep's user"}
	}
	s := filepath.Join(tmp, "s")
	if len(s) > MaxSocketPath {
		return nil, fmt.Errorf("socket path %s (where it is bound before its rename to %s) is %d bytes, longer than the unix socket limit of %d: use a shorter path", s, path, len(s), MaxSocketPath)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: s, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false) // it is unlinked by its final name
	// By path, but in a directory only podstep can enter: no one can
	// swap the name between the bind and here.
	err = os.Chmod(s, perm)
	if err == nil && gid >= 0 {
		err = os.Lchown(s, -1, gid)
	}
	if err == nil {
		err = os.Rename(s, path)
	}
	if err != nil {
		_ = l.Close()
		_ = os.Remove(s)
		return nil, err
	}
	return l, nil
}

// OpenBeneath opens rel, a local path (not absolute, no ".."), under the
// directory root, making its missing parent directories (dirPerm, less
// the umask), and follows no symbolic link on the way or at its end: each
// component is opened with openat(2) and O_NOFOLLOW from its parent's
// handle, so a link planted anywhere under root is refused, never
// followed out of it (as openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS,
// which would not make the directories). root itself is opened as named:
// the caller trusts it.
//
// Where the directories exist, one openat2 call does it all (Linux 5.6+).
func OpenBeneath(root, rel string, flag int, perm, dirPerm fs.FileMode) (*os.File, error) {
	if filepath.IsLocal(rel) {
		if fd, err := openat2Beneath(root, rel, flag, uint32(perm.Perm())); err == nil {
			return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
		}
	}
	dir, base := filepath.Split(filepath.Clean(rel))
	fd, err := walkBeneath(root, dir, dirPerm)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }()
	name := filepath.Join(root, rel)
	f, err := unix.Openat(fd, base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, beneathError("open", name, err)
	}
	return os.NewFile(uintptr(f), name), nil
}

// MkdirBeneath makes rel, a local path, and its missing parents under
// root (dirPerm, less the umask), following no symbolic link
// (OpenBeneath).
func MkdirBeneath(root, rel string, dirPerm fs.FileMode) error {
	fd, err := walkBeneath(root, rel, dirPerm)
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}

// walkBeneath opens root, then each directory of rel under it, making
// those missing, with O_NOFOLLOW; it returns the last one's handle.
func walkBeneath(root, rel string, dirPerm fs.FileMode) (int, error) {
	rel = filepath.Clean(rel)
	if rel != "." && !filepath.IsLocal(rel) {
		return -1, fmt.Errorf("%s: not a path inside %s", rel, root)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	if rel == "." {
		return fd, nil
	}
	done := root
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		done = filepath.Join(done, c)
		if err := unix.Mkdirat(fd, c, uint32(dirPerm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			_ = unix.Close(fd)
			return -1, &fs.PathError{Op: "mkdir", Path: done, Err: err}
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, beneathError("open", done, err)
		}
		fd = next
	}
	return fd, nil
}

// beneathError names a link met on the way for what it is.
func beneathError(op, path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &UnsafeError{Path: path, Why: "is a symbolic link", Want: "no link on the way (podstep follows none here)"}
		}
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
