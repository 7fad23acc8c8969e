package watch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/steps"
)

// TestHoldLetsGoBeforeDeadline: a held call that nobody lets go goes
// upstream by itself shortly before its caller's deadline, with a warning,
// and the caller gets its answer, not DeadlineExceeded.
func TestHoldLetsGoBeforeDeadline(t *testing.T) {
	var auto atomic.Int32
	var held atomic.Int32
	h := NewHold(HoldOptions{AutoReleased: func(Held) { auto.Add(1) }, Holding: func(Held) { held.Add(1) }})
	r := newRig(t, Options{Hold: h})
	// A client whose RunPodSandbox carries a 2 s deadline: twice its 1 s
	// timeout, as the kubelet's carries twice its runtimeRequestTimeout
	// (4 min by default).
	c, err := cri.Dial(r.ep, "", cri.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := newKubelet(t, c, sandboxConfig("late", "uid-late"))
	start := time.Now()
	if _, err := k.c.RunPodSandbox(context.Background(), runReq(k)); err != nil {
		t.Fatalf("RunPodSandbox after %s: %v (want it let go before the deadline)", time.Since(start), err)
	}
	if d := time.Since(start); d < 1500*time.Millisecond || d > 2*time.Second {
		t.Errorf("answered after %s, want a little before the 2 s deadline", d)
	}
	if held.Load() != 1 || auto.Load() != 1 {
		t.Errorf("held %d, let go by itself %d; want 1 and 1", held.Load(), auto.Load())
	}
}

// TestHoldStagesAndContinue: only the chosen stages are held; Release lets
// one call go, Continue the rest of the stage; Close lets everything go.
func TestHoldStagesAndContinue(t *testing.T) {
	h := NewHold(HoldOptions{Stages: []steps.Stage{steps.StageSandbox}})
	r := newRig(t, Options{Hold: h})
	ctx := context.Background()
	k := newKubelet(t, r.client, sandboxConfig("held", "uid-held"))
	done := make(chan error, 1)
	go func() {
		_, err := k.c.Version(ctx) // node-level: never held
		if err == nil {
			k.sandbox(ctx)
		}
		done <- err
	}()
	waitHeld := func(method string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if hs := h.Held(); len(hs) == 1 && hs[0].Call.Name() == method {
				if hs[0].Request == nil || hs[0].Stage != steps.StageSandbox {
					t.Errorf("held %s: request %v, stage %s", method, hs[0].Request, hs[0].Stage)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not held: %v", method, h.Held())
			}
		}
	}
	waitHeld("RunPodSandbox")
	if !h.Release() {
		t.Fatal("Release: nothing held")
	}
	waitHeld("PodSandboxStatus")
	h.Continue()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The next stage's calls are not held (only sandbox is).
	if _, err := k.c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}); err != nil {
		t.Fatal(err)
	}
	if len(h.Held()) != 0 {
		t.Errorf("held %v", h.Held())
	}
	h.Close()
}
