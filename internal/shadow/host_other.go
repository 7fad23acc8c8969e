//go:build !linux

package shadow

import (
	"errors"
	"os/exec"
)

// startInMountNS is Linux-only: a shadow runtime runs on a Linux node.
func startInMountNS(*exec.Cmd, int) error {
	return errors.New("entering another mount namespace: not supported on this OS")
}

// peerPID is Linux-only (SO_PEERCRED).
func peerPID(string) (int, error) { return 0, errors.New("SO_PEERCRED: not on this OS") }
