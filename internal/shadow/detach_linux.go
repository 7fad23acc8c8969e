package shadow

import "golang.org/x/sys/unix"

// detach lazily unmounts mp (umount -l): a shadow's netns files, shm and
// rootfs mounts go even while a process still holds them.
func detach(mp string) error { return unix.Unmount(mp, unix.MNT_DETACH) }
