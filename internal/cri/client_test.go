package cri

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// slowRuntime answers the creating calls after delay, and reports whether
// the server saw the call's context cancelled before it answered.
type slowRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	delay     time.Duration
	cancelled chan string
}

var _ runtimeapi.RuntimeServiceServer = (*slowRuntime)(nil)

func (s *slowRuntime) wait(ctx context.Context, method string) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		s.cancelled <- method
	}
}

func (s *slowRuntime) RunPodSandbox(ctx context.Context, _ *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	s.wait(ctx, "RunPodSandbox")
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb"}, nil
}

func (s *slowRuntime) CreateContainer(ctx context.Context, _ *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	s.wait(ctx, "CreateContainer")
	return &runtimeapi.CreateContainerResponse{ContainerId: "c"}, nil
}

func (s *slowRuntime) StartContainer(ctx context.Context, _ *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s.wait(ctx, "StartContainer")
	return &runtimeapi.StartContainerResponse{}, nil
}

func (s *slowRuntime) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s.wait(ctx, "ListContainers")
	return &runtimeapi.ListContainersResponse{}, nil
}

func serve(t *testing.T, srv runtimeapi.RuntimeServiceServer) *Client {
	t.Helper()
	return serveWith(t, srv, Options{Timeout: 10 * time.Second})
}

// serveWith serves srv on a socket of its own and dials it with o.
func serveWith(t *testing.T, srv runtimeapi.RuntimeServiceServer, o Options) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, srv)
	go func() { _ = g.Serve(l) }() // returns when g.Stop closes l
	t.Cleanup(g.Stop)
	c, err := Dial("unix://"+sock, "", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSandboxDeadline: RunPodSandbox gets twice the per-call timeout, as the
// kubelet gives it (remoteRuntimeService.RunPodSandbox); another call still
// gets the timeout. A runtime that answers after 1.5 timeouts answers
// RunPodSandbox, and ListContainers ends DeadlineExceeded.
func TestSandboxDeadline(t *testing.T) {
	const timeout = time.Second
	srv := &slowRuntime{delay: timeout * 3 / 2, cancelled: make(chan string, 10)}
	c := serveWith(t, srv, Options{Timeout: timeout})
	for _, tc := range []struct {
		method string
		call   func() error
		want   codes.Code
	}{
		{"RunPodSandbox", func() error {
			_, err := c.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{})
			return err
		}, codes.OK},
		{"ListContainers", func() error {
			_, err := c.ListContainers(context.Background(), nil)
			return err
		}, codes.DeadlineExceeded},
	} {
		t.Run(tc.method, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.want {
				t.Errorf("%s answered after %v with a %v timeout: %v, want %v", tc.method, srv.delay, timeout, err, tc.want)
			}
		})
	}
	if got := SandboxTimeout(2 * time.Minute); got != 4*time.Minute {
		t.Errorf("SandboxTimeout(2m) = %v, want the kubelet's 4m0s", got)
	}
}

// TestCreatingCallsSettle: a cancelled context does not abandon
// RunPodSandbox, CreateContainer or StartContainer (the runtime would go on
// without the client); it still abandons a call that makes nothing.
func TestCreatingCallsSettle(t *testing.T) {
	srv := &slowRuntime{delay: 300 * time.Millisecond, cancelled: make(chan string, 10)}
	c := serve(t, srv)
	for _, tc := range []struct {
		method string
		call   func(ctx context.Context) error
		settle bool
	}{
		{"RunPodSandbox", func(ctx context.Context) error {
			_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{})
			return err
		}, true},
		{"CreateContainer", func(ctx context.Context) error {
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{})
			return err
		}, true},
		{"StartContainer", func(ctx context.Context) error {
			_, err := c.StartContainer(ctx, "c")
			return err
		}, true},
		{"ListContainers", func(ctx context.Context) error {
			_, err := c.ListContainers(ctx, nil)
			return err
		}, false},
	} {
		t.Run(tc.method, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			err := tc.call(ctx)
			if tc.settle {
				if err != nil {
					t.Errorf("%s: %v, want the runtime's answer after the cancel", tc.method, err)
				}
				select {
				case m := <-srv.cancelled:
					t.Errorf("the runtime saw %s cancelled", m)
				default:
				}
				return
			}
			if status.Code(err) != codes.Canceled {
				t.Errorf("%s: %v, want Canceled", tc.method, err)
			}
		})
	}
}

// TestUnavailable: a runtime that is gone answers Unavailable.
func TestUnavailable(t *testing.T) {
	c, err := Dial("unix://"+filepath.Join(t.TempDir(), "none.sock"), "", Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, err = c.Version(context.Background())
	if !Unavailable(err) {
		t.Errorf("Version on a missing socket: %v, want Unavailable", err)
	}
	if Unavailable(status.Error(codes.NotFound, "x")) || Unavailable(nil) {
		t.Error("Unavailable is true for NotFound or nil")
	}
}
