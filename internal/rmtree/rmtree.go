//go:build unix

// Package rmtree opens, reads and removes directory trees by handle, so
// that another local user who can rename or replace entries on the way
// cannot redirect what podstep (often root) reads or removes.
//
// A check followed by a removal by path is a race: between the two, a
// directory on the path can become a symbolic link to somewhere else, and
// the removal follows it. Here every step after the first directory is
// relative to an open handle of a directory already checked: each
// component is opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_XDEV) where the kernel has it (Linux 5.6), else with openat
// and O_NOFOLLOW, one component at a time, comparing device numbers; files
// go with unlinkat, emptied directories with unlinkat(AT_REMOVEDIR) on
// their parent's handle. A symbolic link met on the way is removed as a
// link, never followed; a mount point met on the way is not entered (the
// removal stops with an error and the tree stays).
package rmtree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory: the start of every open, read and removal
// beneath it.
type Dir struct {
	fd  int
	dev uint64
	// Path is the path the directory was opened as (for messages only:
	// nothing is ever opened by it again).
	Path string
}

// Open opens the directory at path, links in the path followed (the
// caller has checked the path, e.g. with fsperm.Private). The handle
// starts every later step: nothing beneath it is resolved by path again.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return newDir(fd, path)
}

func newDir(fd int, path string) (*Dir, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: unix.ENOTDIR}
	}
	return &Dir{fd: fd, dev: uint64(st.Dev), Path: path}, nil //nolint:unconvert // Dev's type differs across unixes
}

// Close releases the handle.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Stat is the directory's own status, from its handle.
func (d *Dir) Stat() (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(d.fd, &st)
	return st, err
}

// Real is the directory's absolute path with links resolved, as the
// kernel names the handle (/proc/self/fd), else as the path resolves now.
func (d *Dir) Real() (string, error) {
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(d.fd)); err == nil && filepath.IsAbs(p) {
		return p, nil
	}
	abs, err := filepath.Abs(d.Path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// checkRel refuses a path that is not relative and plain: beneath means
// no absolute path, no "..", no empty component.
func checkRel(rel string) ([]string, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%q: not a relative path", rel)
	}
	for _, p := range strings.Split(rel, string(filepath.Separator)) {
		if p == ".." || strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("%q: not a path beneath the directory", rel)
		}
	}
	return strings.Split(filepath.Clean(rel), string(filepath.Separator)), nil
}

// OpenDir opens the directory rel beneath d: no component may be a link,
// "..", or a mount point. The handle it returns is the directory itself,
// whatever is renamed on the way afterwards.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	parts, err := checkRel(rel)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(d.Path, rel)
	if len(parts) == 1 && parts[0] == "." {
		fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &fs.PathError{Op: "openat", Path: path, Err: err}
		}
		return newDir(fd, path)
	}
	fd, err := openBeneath(d.fd, filepath.Join(parts...), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) {
		fd, err = walk(d.fd, d.dev, parts)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: explain(err)}
	}
	return newDir(fd, path)
}

// walk opens parts one at a time with O_NOFOLLOW, refusing a change of
// device (a mount point) on the way.
func walk(fd int, dev uint64, parts []string) (int, error) {
	cur := fd
	for i, p := range parts {
		next, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) {
			// O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: say it was a link.
			var st unix.Stat_t
			if unix.Fstatat(cur, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		if i > 0 {
			_ = unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			_ = unix.Close(next)
			return -1, err
		}
		if uint64(st.Dev) != dev { //nolint:unconvert // Dev's type differs across unixes
			_ = unix.Close(next)
			return -1, unix.EXDEV
		}
		cur = next
	}
	return cur, nil
}

// explain makes the errors of a refused step say what was refused.
func explain(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("a symbolic link on the way (followed by nothing here): %w", err)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("a mount point on the way (not entered): %w", err)
	}
	return err
}

// TooLargeError is a file ReadFile refused for its size.
type TooLargeError struct {
	Path string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes: not a file podstep wrote", e.Path, e.Max)
}

// ReadFile reads the regular file rel beneath d (no link on the way or at
// the end), at most max bytes: a larger one is a *TooLargeError after
// reading max+1 bytes, whatever its size says.
func (d *Dir) ReadFile(rel string, max int64) ([]byte, error) {
	parts, err := checkRel(rel)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(d.Path, rel)
	fd, err := openBeneath(d.fd, filepath.Join(parts...), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) {
		fd, err = -1, nil
		dir := d.fd
		if len(parts) > 1 {
			dir, err = walk(d.fd, d.dev, parts[:len(parts)-1])
		}
		if err == nil {
			fd, err = unix.Openat(dir, parts[len(parts)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if dir != d.fd {
				_ = unix.Close(dir)
			}
		}
	}
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is not a regular file: it or a directory on the way is a symbolic link (followed by nothing here): %w", path, err)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: explain(err)}
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: path, Max: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Max: max}
	}
	return data, nil
}

// Names lists the entries of d (not "." or "..").
func (d *Dir) Names() ([]string, error) {
	// A handle of its own: reading moves the offset.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: d.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	defer func() { _ = f.Close() }() // read only
	return f.Readdirnames(-1)
}

// RemoveAll removes name, an entry of d, and everything beneath it: a
// file or link is unlinked (a link is never followed), a directory is
// opened beneath d, emptied through its handle, then removed. A name that
// does not exist is no error (as os.RemoveAll).
func (d *Dir) RemoveAll(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q: not a name in %s", name, d.Path)
	}
	return d.removeAt(name)
}

// Remove removes name, an empty directory in d (unlinkat AT_REMOVEDIR):
// after RemoveContents on its handle, so that whatever took its name
// meanwhile is removed only if it is an empty directory too.
func (d *Dir) Remove(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q: not a name in %s", name, d.Path)
	}
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil {
		return &fs.PathError{Op: "rmdir", Path: filepath.Join(d.Path, name), Err: err}
	}
	return nil
}

// RemoveContents removes everything beneath d and leaves d, empty.
func (d *Dir) RemoveContents() error {
	// A few passes: entries made meanwhile by someone else are removed too,
	// but a writer that never stops does not keep podstep busy forever.
	for pass := 0; ; pass++ {
		names, err := d.Names()
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		var errs []error
		for _, n := range names {
			if err := d.removeAt(n); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if pass == 2 {
			return &fs.PathError{Op: "remove contents", Path: d.Path, Err: unix.ENOTEMPTY}
		}
	}
}

func (d *Dir) removeAt(name string) error {
	path := filepath.Join(d.Path, name)
	for try := 0; try < 3; try++ {
		err := unix.Unlinkat(d.fd, name, 0)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM):
			return &fs.PathError{Op: "unlinkat", Path: path, Err: err}
		}
		// A directory (EPERM: as some systems say it).
		sub, err := d.OpenDir(name)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			continue // replaced by a link or a file meanwhile: unlink that
		case err != nil:
			return err
		}
		err = sub.RemoveContents()
		_ = sub.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOTDIR):
			continue
		default:
			return &fs.PathError{Op: "rmdir", Path: path, Err: err}
		}
	}
	return &fs.PathError{Op: "remove", Path: path, Err: errors.New("it keeps changing while podstep removes it")}
}

// RemoveAll removes path and everything beneath it by handle: the
// directory above path is opened (links in it followed: the caller's,
// checked), and the rest is Dir.RemoveAll. For podstep's own dirs in place
// of os.RemoveAll, which resolves every path again as it goes.
func RemoveAll(path string) error {
	path = filepath.Clean(path)
	name := filepath.Base(path)
	if name == "." || name == ".." || name == string(filepath.Separator) {
		return fmt.Errorf("%q: not a directory rmtree removes", path)
	}
	parent, err := Open(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = parent.Close() }()
	return parent.RemoveAll(name)
}
