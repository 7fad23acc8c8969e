//go:build !windows

package probe

import (
	"net"
	"syscall"
)

// probeDialer returns a dialer whose sockets linger 1 second on close, as
// the kubelet's probe.ProbeDialer (pkg/probe/dialer_others.go) does so that
// probe sockets do not pile up in TIME-WAIT (SO_LINGER on, 1 s).
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
					&syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
