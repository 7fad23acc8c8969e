//go:build !linux

package shadow

import "errors"

// detach is Linux-only: a shadow runtime runs on a Linux node.
func detach(string) error { return errors.New("unmount: not supported on this OS") }
