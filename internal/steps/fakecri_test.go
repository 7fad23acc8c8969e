package steps

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
)

// serveCRI serves a fake runtime (what register puts on the gRPC server) on
// a unix socket for the test's lifetime, and returns a client of it.
func serveCRI(t *testing.T, register func(*grpc.Server)) *cri.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	go func() { _ = g.Serve(l) }() // returns when g.Stop closes l
	t.Cleanup(g.Stop)
	c, err := cri.Dial("unix://"+sock, "", cri.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serveFake serves srv as the runtime service (see serveCRI).
func serveFake(t *testing.T, srv runtimeapi.RuntimeServiceServer) *cri.Client {
	t.Helper()
	return serveCRI(t, func(g *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(g, srv) })
}
