package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/steps"
)

// teardownSteps are the plan's teardown steps as the engine has them now.
func (h *harness) teardownSteps() []steps.Step {
	var out []steps.Step
	for _, s := range h.eng.Steps() {
		if s.Stage == steps.StageTeardown {
			out = append(out, s)
		}
	}
	return out
}

// TestTeardownStepped: q then enter puts the teardown steps in the plan
// pane, and each space runs exactly one of them; the pod pane follows;
// once they have all run, q quits at once.
func TestTeardownStepped(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.resize(120, 40)
	h.press("c")
	if h.m.nextID != 0 {
		t.Fatalf("c did not run the pod to its end (next %d)", h.m.nextID)
	}
	if msg := h.press("q"); msg != nil {
		t.Fatalf("q: %T, want the prompt", msg)
	}
	if f := h.frame(); !strings.Contains(f, "tear down now? step through it (enter/y) or all at once (c)") {
		t.Fatalf("no teardown prompt:\n%s", f)
	}
	if msg := h.press("enter"); msg != nil || h.m.decided {
		t.Fatalf("enter: %T, decided %v; want the teardown stepped in the TUI", msg, h.m.decided)
	}
	td := h.teardownSteps()
	if len(td) == 0 {
		t.Fatal("no teardown step in the plan")
	}
	f := h.frame()
	for _, want := range []string{"teardown", td[0].Name, "▸ next: " + fmt.Sprint(td[0].ID)} {
		if !strings.Contains(f, want) {
			t.Errorf("plan pane without %q:\n%s", want, f)
		}
	}
	before := h.m.view().pod.Display
	for i := range td {
		h.press("space")
		got := h.teardownSteps()
		for j, s := range got {
			want := steps.Pending
			if j <= i {
				want = steps.Done
			}
			if s.State != want {
				t.Fatalf("after %d spaces, teardown step %d %s is %v, want %v", i+1, s.ID, s.Name, s.State, want)
			}
		}
		if i == 0 && !strings.Contains(h.frame(), "stopped by the teardown") {
			t.Errorf("pod pane after stopping the containers:\n%s", h.frame())
		}
		if !strings.Contains(h.frame(), got[i].Name) {
			t.Errorf("frame after step %d does not show it:\n%s", got[i].ID, h.frame())
		}
	}
	if got := h.m.view().pod.Display; got != "Terminating" {
		t.Errorf("pod pane says %q after the teardown (before it: %q), want Terminating", got, before)
	}
	if f := h.frame(); !strings.Contains(f, "removed (RemoveContainer)") {
		t.Errorf("pod pane does not show the container removed:\n%s", f)
	}
	if f := h.frame(); !strings.Contains(f, "✓ torn down") {
		t.Errorf("no torn down status:\n%s", f)
	}
	msg := h.press("q")
	if _, ok := msg.(tea.QuitMsg); !ok || !h.m.result.Teardown || h.m.result.Interrupted {
		t.Errorf("q after the teardown: %T, result %+v; want quit, teardown, not interrupted", msg, h.m.result)
	}
	if left := h.eng.LeftBehind(); !left.Empty() {
		t.Errorf("left behind after the stepped teardown: %s", left)
	}
}

// TestTeardownAll: c at the prompt runs every teardown step in the TUI.
func TestTeardownAll(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.press("space")
	h.press("q")
	if msg := h.press("c"); msg != nil || h.m.decided {
		t.Fatalf("c at the prompt: %T, decided %v; want the teardown run in the TUI", msg, h.m.decided)
	}
	td := h.teardownSteps()
	if len(td) == 0 {
		t.Fatal("no teardown step in the plan")
	}
	for _, s := range td {
		if s.State != steps.Done {
			t.Errorf("teardown step %d %s is %v after c, want done", s.ID, s.Name, s.State)
		}
	}
	if h.m.nextID != 0 || !strings.Contains(h.frame(), "✓ torn down") {
		t.Errorf("next %d, frame:\n%s", h.m.nextID, h.frame())
	}
	if msg := h.press("q"); msg == nil {
		t.Error("q after the teardown did not quit")
	}
}

// TestTeardownAfterFailure: a pod that failed is torn down step by step
// too (the failure does not block the teardown's steps, and r does not
// retry it any more).
func TestTeardownAfterFailure(t *testing.T) {
	h := newHarness(t, loadBundle(t, "testdata/fail.yaml"), Options{})
	h.press("c")
	if _, failed := h.eng.Failed(); !failed {
		t.Fatal("the pod did not fail")
	}
	h.press("q")
	h.press("y")
	td := h.teardownSteps()
	if len(td) == 0 {
		t.Fatal("no teardown step in the plan")
	}
	h.press("r")
	if !strings.Contains(h.m.flash, "nothing to retry") {
		t.Errorf("r during the teardown: flash %q", h.m.flash)
	}
	h.press("space")
	if s := h.teardownSteps()[0]; s.State == steps.Pending {
		t.Errorf("space after a failure did not run teardown step %d (flash %q)", s.ID, h.m.flash)
	}
	// ctrl+c between steps: the rest is torn down after the TUI (Settle).
	msg := h.press("ctrl+c")
	if _, ok := msg.(tea.QuitMsg); !ok || !h.m.result.Teardown || !h.m.result.Interrupted {
		t.Errorf("ctrl+c: %T, result %+v; want quit, teardown, interrupted", msg, h.m.result)
	}
}

// TestTeardownFrames: the plan pane with the teardown's steps, one run.
func TestTeardownFrames(t *testing.T) {
	for _, sz := range sizes {
		name := fmt.Sprintf("teardown-step-%dx%d", sz.w, sz.h)
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
			h.resize(sz.w, sz.h)
			h.press("c")
			h.press("q")
			h.press("enter")
			h.press("space")
			checkGolden(t, name, h.frame())
		})
	}
}

// TestReplayTeardownPod: in a replay, the pod pane follows the recorded
// teardown steps: Terminating once the first runs, the containers stopped
// then removed, and back to the pod as created when the replay goes back.
func TestReplayTeardownPod(t *testing.T) {
	h := newReplayHarness(t, "hello.v1.rec")
	h.resize(120, 40)
	var first, stop, remove int
	h.p.Seek(h.p.Len()) // the plan at the end has the teardown's steps
	for _, s := range h.p.Steps() {
		if s.Stage != steps.StageTeardown {
			continue
		}
		if first == 0 {
			first = s.ID
		}
		switch s.Kind {
		case steps.KindStopContainers:
			stop = s.ID
		case steps.KindRemoveContainers:
			remove = s.ID
		}
	}
	if first == 0 || stop == 0 || remove == 0 {
		t.Fatalf("the recording has no teardown steps (first %d, stop %d, remove %d)", first, stop, remove)
	}
	seek := func(id int) {
		t.Helper()
		pos, ok := h.p.Find(id)
		if !ok {
			t.Fatalf("step %d not in the recording", id)
		}
		h.p.Seek(pos)
		h.m.refresh()
	}
	for _, tc := range []struct {
		at           int
		status, want string
	}{
		{first - 1, "Running", "running since"},
		{stop, "Terminating", "stopped by the teardown"},
		{remove, "Terminating", "removed (RemoveContainer)"},
		{first - 1, "Running", "running since"},
	} {
		seek(tc.at)
		f := h.frame()
		if got := h.m.view().pod.Display; got != tc.status {
			t.Errorf("at step %d: STATUS %q, want %q:\n%s", tc.at, got, tc.status, f)
		}
		if !strings.Contains(f, tc.want) {
			t.Errorf("at step %d: pod pane without %q:\n%s", tc.at, tc.want, f)
		}
	}
}

// TestTeardownCtrlC: ctrl+c while a teardown step runs lets it finish
// (the rest is torn down after the TUI); a second ctrl+c cuts it short.
func TestTeardownCtrlC(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.press("c")
	h.press("q")
	h.press("y")
	// A teardown step in flight, as start makes it.
	cancelled := 0
	h.m.run.setCancel(func() { cancelled++ })
	h.m.live.running = running{busy: true, op: "next"}
	if msg := h.pressAsync("ctrl+c"); msg != nil || cancelled != 0 || h.m.ui != uiQuitting {
		t.Fatalf("first ctrl+c: %T, cancelled %d, ui %v; want the step left to finish", msg, cancelled, h.m.ui)
	}
	if !h.m.result.Teardown || !h.m.result.Interrupted || !h.m.decided {
		t.Errorf("first ctrl+c: result %+v decided %v; want teardown, interrupted", h.m.result, h.m.decided)
	}
	if f := h.frame(); !strings.Contains(f, "finishing this teardown step") {
		t.Errorf("no word of the step finishing:\n%s", f)
	}
	h.pressAsync("ctrl+c")
	if cancelled != 1 {
		t.Errorf("second ctrl+c: cancelled %d times, want 1", cancelled)
	}
	h.m.live.running = running{}
	h.m.run.setCancel(nil)
}
