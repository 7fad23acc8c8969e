//go:build unix

// Package fsperm checks and makes the directories podstep puts sockets,
// pod files and outputs in, so that another local user cannot redirect
// what podstep (often root) writes, removes or chmods there.
//
// The rules are those of ssh's StrictModes and of containerd and the
// kubelet for their own state and socket directories:
//   - a directory podstep uses is never a symbolic link, is owned by the
//     user podstep runs as (or by root) and is writable by no one else
//     (Private);
//   - each directory above it is owned by that user or by root, and one
//     that others may write to must be sticky, as /tmp is, so that no one
//     else can rename or replace what the user owns inside it (Trusted);
//   - a directory podstep makes is made one component at a time, then
//     opened without following links and given its mode and group on the
//     handle (fchmod, fchown), never by path after the fact (MkdirAll).
package fsperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnsafeError is a directory podstep refuses to use: which, why, and what
// would make it acceptable.
type UnsafeError struct {
	Path string // the directory (or the ancestor) at fault
	Why  string // "is writable by others and not sticky", "is owned by uid 1000", …
	Want string // what podstep expects instead
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s %s: expected %s", e.Path, e.Why, e.Want)
}

// uid is the user podstep runs as (a variable so tests can play another).
var uid = os.Geteuid

// Private checks that dir may hold podstep's own files: a directory, not a
// link, owned by the user podstep runs as or by root, writable by no one
// else (group writable only when groupOK, for a socket directory shared
// with a group on purpose), and that every directory above it is Trusted.
func Private(dir string, groupOK bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := private(dir, fi, groupOK); err != nil {
		return err
	}
	return Trusted(filepath.Dir(dir))
}

func private(dir string, fi fs.FileInfo, groupOK bool) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &UnsafeError{Path: dir, Why: "is a symbolic link", Want: "a real directory (podstep follows no link here)"}
	}
	if !fi.IsDir() {
		return &UnsafeError{Path: dir, Why: "is not a directory", Want: "a directory"}
	}
	if o := owner(fi); o != uid() && o != 0 {
		return &UnsafeError{Path: dir, Why: fmt.Sprintf("is owned by uid %d", o), Want: fmt.Sprintf("a directory owned by uid %d (podstep's user) or root", uid())}
	}
	bad := fs.FileMode(0o002)
	if !groupOK {
		bad |= 0o020
	}
	if fi.Mode().Perm()&bad != 0 {
		return &UnsafeError{Path: dir, Why: fmt.Sprintf("is writable by %s (mode %04o)", writers(fi.Mode().Perm()&bad), fi.Mode().Perm()), Want: "a directory only its owner can write to (chmod go-w)"}
	}
	return nil
}

// Trusted checks that no user but podstep's and root can change what dir
// names: dir and each directory above it (links resolved, each link
// itself owned by the user or root) is owned by the user or root, and one
// writable by group or others is sticky.
func Trusted(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The links on the way: each must be owned by the user or root (who
	// may change a link is decided by its directory, checked below too).
	seen := 0
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if o := owner(fi); o != uid() && o != 0 {
				return &UnsafeError{Path: p, Why: fmt.Sprintf("is a symbolic link owned by uid %d", o), Want: "links on the way owned by podstep's user or root"}
			}
		}
		if p == filepath.Dir(p) {
			break
		}
		if seen++; seen > 255 {
			break
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if o := owner(fi); o != uid() && o != 0 {
			return &UnsafeError{Path: p, Why: fmt.Sprintf("is owned by uid %d", o), Want: fmt.Sprintf("directories owned by uid %d (podstep's user) or root on the whole path", uid())}
		}
		if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return &UnsafeError{Path: p, Why: fmt.Sprintf("is writable by %s and not sticky (mode %04o)", writers(perm&0o022), perm), Want: "no directory on the path that another user could rename or replace entries in (chmod go-w, or +t as /tmp)"}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// MkdirAll makes dir and its missing parents, each with mode perm and,
// when gid >= 0, that group, whatever the umask, checking as it goes: a
// parent that exists must be Trusted, a component that appears under it
// meanwhile (a link, another user's directory) is refused, and the mode
// and group are set on an open handle of the directory podstep made
// (O_NOFOLLOW), never by path. Directories that existed keep their mode;
// dir itself, made or found, must pass Private (groupOK when gid >= 0).
func MkdirAll(dir string, perm fs.FileMode, gid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var missing []string
	p := abs
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if p == filepath.Dir(p) {
			break
		}
		p = filepath.Dir(p)
	}
	if err := Trusted(p); err != nil { // the deepest that exists
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := mkdirOne(missing[i], perm, gid); err != nil {
			return err
		}
	}
	return Private(abs, gid >= 0)
}

// mkdirOne makes one directory and sets its mode and group on its handle.
// If something else took the name first, the name is refused unless it is
// an acceptable directory (Private).
func mkdirOne(d string, perm fs.FileMode, gid int) error {
	if err := unix.Mkdir(d, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return Private(d, gid >= 0)
		}
		return &fs.PathError{Op: "mkdir", Path: d, Err: err}
	}
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: d, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: d, Err: err}
	}
	if int(st.Uid) != uid() {
		return &UnsafeError{Path: d, Why: fmt.Sprintf("was replaced by a directory of uid %d while podstep made it", st.Uid), Want: "a directory podstep made"}
	}
	if gid >= 0 {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			return &fs.PathError{Op: "fchown", Path: d, Err: err}
		}
	}
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "fchmod", Path: d, Err: err}
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func writers(bits fs.FileMode) string {
	switch {
	case bits&0o022 == 0o022:
		return "group and others"
	case bits&0o002 != 0:
		return "others"
	default:
		return "its group"
	}
}
