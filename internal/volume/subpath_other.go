//go:build !linux

package volume

import (
	"fmt"
	"runtime"
)

// PrepareSubPath refuses every subPath off Linux: the kubelet's safe open
// (subpath_linux.go doSafeOpen) needs openat with O_PATH and a bind mount
// through /proc/self/fd, and podstep does not model the other platforms'
// subpath implementations (subpath_windows.go, subpath_unsupported.go).
func (h *Host) PrepareSubPath(sp SubPath) (SubPathResult, error) {
	return SubPathResult{}, &SubPathError{Volume: sp.VolumeName, Container: sp.ContainerName,
		Err: fmt.Errorf("subpath is not supported on %s: podstep makes subPath mounts safe on Linux only", runtime.GOOS)}
}
