package rmtree

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel says it has no openat2 (before 5.6, or
// a seccomp filter that refuses it): the O_NOFOLLOW walk does instead.
var noOpenat2 atomic.Bool

// openBeneath opens rel beneath dirfd with openat2: no link, no "..", no
// mount crossing. ENOSYS: use the walk.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	if noOpenat2.Load() {
		return -1, unix.ENOSYS
	}
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && fd < 0 && !probe() {
		noOpenat2.Store(true)
		return -1, unix.ENOSYS
	}
	return fd, err
}

// probe: does openat2 work at all here (a seccomp filter may say EPERM
// for every call)?
func probe() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}
