package tui

import (
	"bytes"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/podstep/podstep/internal/steps"
)

// TestProgram drives the real bubbletea event loop: steps with space until
// the runtime is asked its Version, the rest with c, then q, c (the
// teardown all at once, in the TUI) and q.
func TestProgram(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(80, 24))
	tm.Send(keyPress("space"))
	// The renderer writes only changed cells: wait on the engine instead.
	for deadline := time.Now().Add(10 * time.Second); h.countCalls("Version") == 0 && time.Now().Before(deadline); {
		tm.Send(keyPress("space")) // refused while a step runs
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); !h.eng.Finished() && time.Now().Before(deadline); {
		tm.Send(keyPress("c")) // refused while a step runs
		time.Sleep(50 * time.Millisecond)
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		// No doubled letters: the renderer may write "ll" as "l" and a repeat.
		return bytes.Contains(b, []byte("steps done"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyPress("q"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("tear down now?"))
	}, teatest.WithDuration(5*time.Second))
	// c: the teardown's steps all at once, in the TUI; then q quits.
	tm.Send(keyPress("c"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("torn down"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyPress("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*model)
	if !final.result.Teardown || final.result.Interrupted {
		t.Errorf("result %+v, want teardown", final.result)
	}
	for _, s := range h.eng.Steps() {
		if s.State != steps.Done {
			t.Errorf("step %d %s: %s", s.ID, s.Name, s.State)
		}
	}
	var _ tea.Model = final
}
