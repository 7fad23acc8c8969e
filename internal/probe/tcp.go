package probe

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TCPSocket runs one tcpSocket probe attempt as the kubelet does
// (pkg/kubelet/prober/prober.go runProbe → DoTCPProbe in
// pkg/probe/tcp/tcp.go): the port is resolved with ResolvePort, the host is
// action.Host or podIP, and a TCP connection to host:port is opened with the
// timeout (0 means none; ctx can cancel earlier) and closed at once.
//
//   - The port does not resolve: Unknown with Err set (the kubelet retries,
//     then records "errored").
//   - The connection opens: Success, empty Output.
//   - It does not: Failure, Output is the dial error text, e.g. "dial tcp
//     10.1.2.3:5432: connect: connection refused" or "dial tcp
//     10.1.2.3:5432: i/o timeout".
func TCPSocket(ctx context.Context, action *corev1.TCPSocketAction, podIP string, container *corev1.Container, timeout time.Duration) Result {
	if action == nil {
		return Result{Outcome: Unknown, Err: errors.New("no tcpSocket action")}
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return Result{Outcome: Unknown, Err: err, Target: net.JoinHostPort(host, action.Port.String())}
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{Outcome: Failure, Output: err.Error(), Target: addr}
	}
	_ = conn.Close()
	return Result{Outcome: Success, Target: addr}
}
