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
