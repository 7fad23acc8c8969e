package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// GRPC runs one grpc probe attempt as the kubelet does
// (pkg/kubelet/prober/prober.go runProbe → pkg/probe/grpc/grpc.go Probe):
// a plaintext connection to podIP:action.Port (the kubelet has no Host for
// grpc probes) with the User-Agent ProbeUserAgent, waited for until the
// timeout as the kubelet's blocking dial does, then grpc.health.v1.Health
// Check of action.Service ("" when unset), all within timeout. Every
// failure is a Failure (never an error), with the kubelet's texts:
//
//   - no connection within the timeout: `timeout: failed to connect
//     service "HOST:PORT" within 1s: context deadline exceeded`;
//   - Unimplemented: "error: this server does not implement the grpc
//     health protocol (grpc.health.v1.Health): MESSAGE";
//   - DeadlineExceeded: "timeout: health rpc did not complete within 1s";
//   - another RPC error: "error: health rpc probe failed: ERROR";
//   - a status other than SERVING: `service unhealthy (responded with
//     "NOT_SERVING")`.
//
// Success has Output "service healthy".
func GRPC(ctx context.Context, action *corev1.GRPCAction, podIP string, timeout time.Duration) Result {
	if action == nil {
		return Result{Outcome: Unknown, Err: errors.New("no grpc action")}
	}
	service := ""
	if action.Service != nil {
		service = *action.Service
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(action.Port)))
	res := Result{Target: "grpc " + addr}
	if service != "" {
		res.Target += " service " + strconv.Quote(service)
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(ProbeUserAgent),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		res.Outcome, res.Output = Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
		return res
	}
	defer func() { _ = conn.Close() }()
	if err := waitReady(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			res.Outcome, res.Output = Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)
		} else {
			res.Outcome, res.Output = Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
		}
		return res
	}
	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		res.Outcome = Failure
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unimplemented:
			res.Output = "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
		case codes.DeadlineExceeded:
			res.Output = fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		default:
			res.Output = fmt.Sprintf("error: health rpc probe failed: %+v", err)
		}
		return res
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		res.Outcome, res.Output = Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
		return res
	}
	res.Outcome, res.Output = Success, "service healthy"
	return res
}

// waitReady waits until conn is connected, as grpc.WithBlock does for the
// kubelet's grpc.DialContext: connection failures are retried (with gRPC's
// backoff) until ctx ends, whose error is returned.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if s == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
