package session

import (
	"testing"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/steps"
)

// TestCreationLeavesOutTeardown: the TUI may step the teardown before
// Summarize; its steps and calls are not the creation's timing.
func TestCreationLeavesOutTeardown(t *testing.T) {
	call := func(seq int) cri.Call { return cri.Call{Seq: seq, Method: "M"} }
	for _, tc := range []struct {
		name             string
		all              []steps.Step
		calls            []cri.Call
		wantSteps, wantC int
	}{
		{"no teardown (--auto)", []steps.Step{{Stage: steps.StageAdmit, Calls: []cri.Call{call(1)}}, {Stage: steps.StageContainers, Calls: []cri.Call{call(2)}}},
			[]cri.Call{call(1), call(2)}, 2, 2},
		{"teardown stepped in the TUI", []steps.Step{{Stage: steps.StageAdmit, Calls: []cri.Call{call(1)}}, {Stage: steps.StageTeardown, Calls: []cri.Call{call(2), call(3)}}, {Stage: steps.StageTeardown}},
			[]cri.Call{call(1), call(2), call(3)}, 1, 1},
	} {
		gotS, gotC := creation(tc.all, tc.calls)
		if len(gotS) != tc.wantSteps || len(gotC) != tc.wantC {
			t.Errorf("%s: %d steps, %d calls; want %d, %d", tc.name, len(gotS), len(gotC), tc.wantSteps, tc.wantC)
		}
		for _, s := range gotS {
			if s.Stage == steps.StageTeardown {
				t.Errorf("%s: a teardown step kept", tc.name)
			}
		}
	}
}
