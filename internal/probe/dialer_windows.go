//go:build windows

package probe

import (
	"net"
	"syscall"
)

// probeDialer returns a dialer whose sockets linger 1 second on close, as
// the kubelet's Windows probe.ProbeDialer (pkg/probe/dialer_windows.go).
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
					&syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
