package steps

import (
	"context"
	"testing"
)

// TestNotFoundThroughClient: teardown treats an already-removed object as
// done, which relies on seeing the runtime's NotFound through cri.Error.
func TestNotFoundThroughClient(t *testing.T) {
	c := newSim(t)
	_, err := c.StopPodSandbox(context.Background(), "does-not-exist")
	if err == nil {
		t.Fatal("StopPodSandbox of an unknown sandbox succeeded; the simulated runtime should answer NotFound")
	}
	if !notFound(err) {
		t.Errorf("notFound(%v) = false, want true", err)
	}
	if _, err := c.Version(context.Background()); notFound(err) {
		t.Error("a successful call counted as NotFound")
	}
}
