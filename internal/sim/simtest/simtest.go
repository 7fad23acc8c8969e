// Package simtest starts a simulated CRI runtime for tests in other
// packages and dials podstep's CRI client to it. It is imported by tests only.
package simtest

import (
	"os"
	"testing"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/sim"
)

// Client starts a simulated runtime with o in a fresh directory short
// enough for its unix socket, and returns a client for it. The client,
// the runtime and the directory are gone when the test ends. Its requests
// may name log dirs in the temp dir too (the tests' t.TempDir).
func Client(t testing.TB, o sim.Options) *cri.Client {
	t.Helper()
	o.Dirs = append(o.Dirs, os.TempDir())
	// t.TempDir paths can be longer than a unix socket path allows.
	dir, err := os.MkdirTemp("", "podstep-sim")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.StartWithOptions(dir, o)
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	c, err := cri.Dial(srv.Endpoint(), "", cri.Options{})
	if err != nil {
		srv.Stop()
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); srv.Stop(); _ = os.RemoveAll(dir) })
	return c
}
