//go:build unix && !linux

package rmtree

import "golang.org/x/sys/unix"

// openBeneath: no openat2 outside Linux; the O_NOFOLLOW walk does.
func openBeneath(int, string, int) (int, error) { return -1, unix.ENOSYS }
