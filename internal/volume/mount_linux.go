//go:build linux

package volume

import (
	"errors"

	"golang.org/x/sys/unix"
)

// unmount unmounts path; when a container still holds it (EBUSY) it is
// detached, as umount -l would.
func unmount(path string) error {
	err := unix.Unmount(path, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	return err
}

// mountTmpfs mounts a tmpfs at dir with the options opts.
func mountTmpfs(dir, opts string) error {
	return unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
}

// bindMount bind-mounts src at dir, read-only when ro (a bind mount takes
// MS_RDONLY only on a remount).
func bindMount(src, dir string, ro bool) error {
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if ro {
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
			return err
		}
	}
	return nil
}
