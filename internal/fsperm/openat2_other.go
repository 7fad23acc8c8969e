//go:build unix && !linux

package fsperm

import "golang.org/x/sys/unix"

// openat2Beneath: no openat2 here; OpenBeneath walks.
func openat2Beneath(string, string, int, uint32) (int, error) { return -1, unix.ENOSYS }
