package cri

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// deadlineRuntime answers ExecSync with how long the call's deadline was
// from its start (0: none).
type deadlineRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	got chan time.Duration
}

func (s *deadlineRuntime) ExecSync(ctx context.Context, _ *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	var d time.Duration
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	s.got <- d
	return &runtimeapi.ExecSyncResponse{}, nil
}

// TestExecSyncDeadline: an ExecSync with a timeout gets that timeout plus
// the call timeout (the runtime's time to clean up); one without (a
// lifecycle hook's) gets no deadline, as the kubelet v1.37's cri-client
// (remoteRuntimeService.ExecSync: "Do not set timeout when timeout is 0").
func TestExecSyncDeadline(t *testing.T) {
	srv := &deadlineRuntime{got: make(chan time.Duration, 1)}
	c := serve(t, srv) // call timeout 10 s
	for _, tc := range []struct {
		timeout  int64
		min, max time.Duration // 0, 0: no deadline
	}{
		{timeout: 3, min: 12 * time.Second, max: 13 * time.Second},
		{timeout: 0},
	} {
		if _, err := c.ExecSync(context.Background(), "c", []string{"true"}, tc.timeout); err != nil {
			t.Fatalf("ExecSync timeout %d: %v", tc.timeout, err)
		}
		got := <-srv.got
		if tc.max == 0 {
			if got != 0 {
				t.Errorf("ExecSync timeout 0: deadline in %s, want none", got)
			}
			continue
		}
		if got < tc.min || got > tc.max {
			t.Errorf("ExecSync timeout %d: deadline in %s, want %s..%s", tc.timeout, got, tc.min, tc.max)
		}
	}
}
