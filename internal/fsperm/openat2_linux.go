package fsperm

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel refuses openat2 (before Linux 5.6, or
// a seccomp filter): OpenBeneath then always walks.
var noOpenat2 atomic.Bool

// openat2Beneath opens rel beneath root in one call, as OpenBeneath's walk
// would, when every directory on the way exists: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS refuses "..", absolute paths and a
// link anywhere, the last component included. Any error sends the caller
// to the walk, which makes the missing directories and names what was
// refused.
func openat2Beneath(root, rel string, flag int, perm uint32) (int, error) {
	if noOpenat2.Load() {
		return -1, unix.ENOSYS
	}
	dfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer func() { _ = unix.Close(dfd) }()
	how := &unix.OpenHow{Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	how.Flags = uint64(flag) | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if flag&unix.O_CREAT != 0 {
		how.Mode = uint64(perm)
	}
	fd, err := unix.Openat2(dfd, rel, how)
	if err == unix.ENOSYS {
		noOpenat2.Store(true)
	}
	return fd, err
}
