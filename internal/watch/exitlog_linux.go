//go:build linux

package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel, a local path, under the directory root for
// reading, following no symbolic link on the way or at its end (openat2's
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; before Linux 5.6, one component at a
// time with O_NOFOLLOW), and only a regular file: a FIFO or device would
// block or never end. root itself is opened as named (the kubelet's own
// log directory).
func openBeneath(root, rel string) (*os.File, error) {
	name := filepath.Join(root, rel)
	dfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { _ = unix.Close(dfd) }()
	const flags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	fd, err := unix.Openat2(dfd, rel, &unix.OpenHow{Flags: flags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = walkNoFollow(dfd, rel, flags)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil, fmt.Errorf("open %s: a symbolic link under the pod's log directory: not followed", name)
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%v)", name, fi.Mode().Type())
	}
	return f, nil
}

// walkNoFollow opens rel under the directory dfd one component at a time,
// each with O_NOFOLLOW (a kernel without openat2).
func walkNoFollow(dfd int, rel string, flags int) (int, error) {
	parts := strings.Split(filepath.Clean(rel), string(filepath.Separator))
	cur := dfd
	for i, part := range parts {
		last := i == len(parts)-1
		fl := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			fl = flags | unix.O_NOFOLLOW
		}
		fd, err := unix.Openat(cur, part, fl, 0)
		if cur != dfd {
			_ = unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}
