//go:build !linux

package volume

import (
	"errors"
	"runtime"
)

// errNoMounts is what the mount helpers return where podstep does not
// mount (only Linux is supported as a node).
var errNoMounts = errors.New("mounts are supported on Linux only, not " + runtime.GOOS)

func unmount(string) error { return errNoMounts }

func mountTmpfs(string, string) error      { return errNoMounts }
func bindMount(string, string, bool) error { return errNoMounts }
