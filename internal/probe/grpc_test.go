package probe

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// healthStub answers Check with the status its service name maps to
// (NotFound for a name it lacks) and records the User-Agent it got.
type healthStub struct {
	healthpb.UnimplementedHealthServer
	status map[string]healthpb.HealthCheckResponse_ServingStatus
	ua     chan string
	slow   time.Duration
}

func (h *healthStub) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	select {
	case h.ua <- strings.Join(md.Get("user-agent"), ","):
	default:
	}
	if h.slow > 0 {
		select {
		case <-time.After(h.slow):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	st, ok := h.status[req.GetService()]
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// grpcServer serves h (none: no health service) on a loopback port.
func grpcServer(t *testing.T, h healthpb.HealthServer) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if h != nil {
		healthpb.RegisterHealthServer(s, h)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

func TestGRPC(t *testing.T) {
	stub := &healthStub{status: map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": healthpb.HealthCheckResponse_SERVING, "down": healthpb.HealthCheckResponse_NOT_SERVING}, ua: make(chan string, 1)}
	up := grpcServer(t, stub)
	bare := grpcServer(t, nil)
	slow := grpcServer(t, &healthStub{status: stub.status, slow: time.Minute})
	dead := closedPort(t)
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		port    int
		service *string
		outcome Outcome
		output  string
		target  string
	}{
		{name: "serving", port: up, outcome: Success, output: "service healthy", target: fmt.Sprintf("grpc 127.0.0.1:%d", up)},
		{name: "not serving", port: up, service: str("down"), outcome: Failure,
			output: `service unhealthy (responded with "NOT_SERVING")`, target: fmt.Sprintf(`grpc 127.0.0.1:%d service "down"`, up)},
		{name: "unknown service", port: up, service: str("nope"), outcome: Failure,
			output: "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{name: "no health service", port: bare, outcome: Failure,
			output: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{name: "rpc too slow", port: slow, outcome: Failure, output: "timeout: health rpc did not complete within 300ms"},
		{name: "nothing listens", port: dead, outcome: Failure,
			output: fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 300ms: context deadline exceeded`, dead)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := GRPC(context.Background(), &corev1.GRPCAction{Port: int32(tc.port), Service: tc.service}, "127.0.0.1", 300*time.Millisecond)
			if r.Outcome != tc.outcome || r.Output != tc.output || r.Err != nil || (tc.target != "" && r.Target != tc.target) {
				t.Errorf("got %s %q target %q err %v, want %s %q target %q", r.Outcome, r.Output, r.Target, r.Err, tc.outcome, tc.output, tc.target)
			}
		})
	}
	if ua := <-stub.ua; !strings.HasPrefix(ua, ProbeUserAgent) {
		t.Errorf("User-Agent %q, want %s first", ua, ProbeUserAgent)
	}
}
