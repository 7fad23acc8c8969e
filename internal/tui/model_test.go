package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

func TestNextKeysRunOneStep(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	for i, k := range []string{"space", "n", "enter"} {
		h.press(k)
		if got := h.state(i + 1); got != steps.Done {
			t.Fatalf("after %q: step %d is %s, want done", k, i+1, got)
		}
		if got := h.state(i + 2); got != steps.Pending {
			t.Fatalf("after %q: step %d is %s, want pending (one step per key)", k, i+2, got)
		}
		if s, _ := h.m.selected(); s.ID != i+1 {
			t.Errorf("after %q: cursor on step %d, want %d (the step that ran)", k, s.ID, i+1)
		}
		if h.m.nextID != i+2 {
			t.Errorf("after %q: next step %d, want %d", k, h.m.nextID, i+2)
		}
	}
}

func TestContinueStopsAtBreakpoint(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{Breaks: []steps.Stage{steps.StageSandbox}})
	h.press("c")
	if h.m.nextID != 5 {
		t.Fatalf("continue stopped before step %d, want 5 (first sandbox step)", h.m.nextID)
	}
	for id := 1; id <= 4; id++ {
		if h.state(id) != steps.Done {
			t.Errorf("step %d %s, want done", id, h.state(id))
		}
	}
	h.press("c")
	if !h.eng.Finished() {
		t.Fatalf("second continue did not reach the end; next %d", h.m.nextID)
	}
	if h.m.pod.Display != "Running" || h.m.pod.Ready != "2/2" {
		t.Errorf("pod %s %s, want Running 2/2", h.m.pod.Display, h.m.pod.Ready)
	}
	if !strings.Contains(h.frame(), "all steps done") {
		t.Errorf("frame does not say all steps are done:\n%s", h.frame())
	}
}

// TestBreakSteps: --break takes step names, the container part a glob
// (start/web, create/*), as b breaks on a step; one matching no step of
// the pod is said on the status line.
func TestBreakSteps(t *testing.T) {
	for _, tc := range []struct {
		breaks []string
		stops  []string // the steps continue stops before, in order
		flash  string
	}{
		{[]string{"start/*"}, []string{"start/first", "start/second"}, ""},
		{[]string{"create/second"}, []string{"create/second"}, ""},
		{[]string{"pull"}, []string{"pull/first", "pull/second"}, ""},
		{[]string{"start/nosuch"}, nil, "--break start/nosuch: no step of this pod has that name"},
	} {
		t.Run(strings.Join(tc.breaks, ","), func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{BreakSteps: tc.breaks})
			if tc.flash != "" && !strings.Contains(h.frame(), tc.flash) {
				t.Errorf("frame does not say %q:\n%s", tc.flash, h.frame())
			}
			var stops []string
			for h.press("c"); !h.eng.Finished(); h.press("c") {
				s, _ := h.eng.NextStep()
				stops = append(stops, s.Name)
			}
			if strings.Join(stops, " ") != strings.Join(tc.stops, " ") {
				t.Errorf("continue stopped before %v, want %v", stops, tc.stops)
			}
		})
	}
}

// TestUnknownKey: a key that does nothing says so, and where help is.
func TestUnknownKey(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	h.resize(80, 24)
	h.press("x")
	if f := h.frame(); !strings.Contains(f, "x does nothing here: ? for help") {
		t.Errorf("frame after x:\n%s", f)
	}
	h.press("j")
	if f := h.frame(); strings.Contains(f, "does nothing here") {
		t.Errorf("a known key left the message:\n%s", f)
	}
}

func TestBreakToggles(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	// The cursor starts on step 1; up puts it on the "admit" header.
	h.press("down") // step 2's header
	h.press("down") // step 2
	h.press("b")
	if !h.eng.Breakpoint(2) {
		t.Fatal("b on step 2 did not set its breakpoint")
	}
	h.press("b")
	if h.eng.Breakpoint(2) {
		t.Fatal("second b did not clear it")
	}
	// On a stage header: a stage breakpoint, before the stage's first step.
	for h.m.plan.rows[h.m.plan.cursor].stage != steps.StageSandbox || h.m.plan.rows[h.m.plan.cursor].step >= 0 {
		h.press("j")
	}
	h.press("b")
	if !h.eng.Breakpoint(5) || h.eng.Breakpoint(6) {
		t.Fatal("b on the sandbox header did not break before step 5 only")
	}
	h.press("c")
	if h.m.nextID != 5 {
		t.Fatalf("continue stopped before %d, want 5", h.m.nextID)
	}
}

func TestCursorAndScroll(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	h.resize(80, 24)
	start := h.m.plan.cursor
	h.press("j")
	h.press("down")
	h.press("k")
	if h.m.plan.cursor != start+1 {
		t.Fatalf("cursor %d, want %d", h.m.plan.cursor, start+1)
	}
	h.press("up")
	h.press("up")
	if s, _ := h.m.selected(); s.ID != 1 {
		t.Fatalf("on the admit header the step pane shows step %d, want 1", s.ID)
	}
	h.press("pgdown")
	if h.m.pane.scroll == 0 {
		t.Fatal("pgdn did not scroll the step pane")
	}
	h.m.render()
	h.press("pgup")
	if h.m.pane.scroll != 0 {
		t.Fatalf("pgup: scroll %d, want 0", h.m.pane.scroll)
	}
}

func TestTabShowsResponseAndLog(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.resize(120, 40)
	for h.m.nextID != 0 {
		h.press("space")
	}
	for s, _ := h.m.selected(); s.Name != "run-sandbox"; s, _ = h.m.selected() {
		h.press("k")
	}
	if f := h.detail(); !strings.Contains(f, "RunPodSandbox → OK") || !strings.Contains(f, "log_directory:") {
		t.Errorf("request view lacks the sent request:\n%s", f)
	}
	h.press("tab")
	if h.m.pane.mode != modeResponse {
		t.Fatalf("mode %s, want response", h.m.pane.mode)
	}
	if f := h.detail(); !strings.Contains(f, "pod_sandbox_id:") {
		t.Errorf("response view lacks the response:\n%s", f)
	}
	h.press("tab")
	if h.m.pane.mode != modeLog {
		t.Fatalf("mode %s, want log", h.m.pane.mode)
	}
	if f := h.frame(); !strings.Contains(f, "log hello") || !strings.Contains(f, "hello from podstep") {
		t.Errorf("log view lacks the container's log:\n%s", f)
	}
	h.press("tab")
	if h.m.pane.mode != modeRequest {
		t.Fatalf("mode %s, want request", h.m.pane.mode)
	}
}

func TestRetryRerunsFailedStep(t *testing.T) {
	h := newHarness(t, loadBundle(t, "testdata/fail.yaml"), Options{})
	h.press("c")
	f, failed := h.eng.Failed()
	if !failed || f.Name != "start/app" || f.Result.Reason != "RunContainerError" {
		t.Fatalf("failed step %+v, want start/app RunContainerError", f)
	}
	if !strings.Contains(h.frame(), "failed: RunContainerError") {
		t.Errorf("frame does not show the failure:\n%s", h.frame())
	}
	before := h.countCalls("StartContainer")
	h.press("space")
	if h.countCalls("StartContainer") != before {
		t.Fatal("space ran a step after a failure")
	}
	// r starts over from the image step with a new container, as the
	// kubelet does: one step runs (the pull), then space runs create and start.
	createBefore := h.countCalls("CreateContainer")
	h.press("r")
	if s, _ := h.eng.NextStep(); s.Name != "create/app" {
		t.Fatalf("after r the next step is %s, want create/app", s.Name)
	}
	h.press("space")
	h.press("space")
	if got := h.countCalls("CreateContainer"); got != createBefore+1 {
		t.Fatalf("CreateContainer calls %d after retry, want %d", got, createBefore+1)
	}
	if got := h.countCalls("StartContainer"); got != before+1 {
		t.Fatalf("StartContainer calls %d after retry, want %d", got, before+1)
	}
}

func TestEscCancelsRunningCall(t *testing.T) {
	h := newHarness(t, loadBundle(t, "testdata/slow.yaml"), Options{})
	h.pressAsync("c")
	for h.m.live.running.id != 8 || h.m.live.running.method != "ImageStatus" {
		msg := <-h.m.events
		h.m.Update(msg)
	}
	if !strings.Contains(h.frame(), "esc cancels") {
		t.Errorf("running frame lacks the cancel hint:\n%s", h.frame())
	}
	h.pressAsync("esc")
	h.waitIdle()
	f, failed := h.eng.Failed()
	if !failed || f.ID != 8 {
		t.Fatalf("after esc: failed step %v %v, want 8 pull/app", f.ID, failed)
	}
	if !strings.Contains(f.Result.Message+f.Calls[len(f.Calls)-1].ErrorMessage(), "cancel") {
		t.Errorf("step failed with %q, want a cancellation", f.Result.Message)
	}
}

func TestQuit(t *testing.T) {
	for _, tc := range []struct {
		keys                  []string
		keep                  bool
		teardown, interrupted bool
	}{
		// enter and y step the teardown in the TUI (teardown_test.go);
		// q then quits, the rest torn down after it.
		{[]string{"q", "enter", "q"}, false, true, false},
		{[]string{"q", "y", "q"}, false, true, false},
		{[]string{"q", "c", "q"}, false, true, false},
		{[]string{"q", "n"}, false, false, false},
		{[]string{"q", "enter"}, true, false, false},
		{[]string{"q", "y", "space", "ctrl+c"}, true, true, true},
		{[]string{"ctrl+c"}, false, true, true},
	} {
		h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Keep: tc.keep})
		h.press("space")
		var last tea.Msg
		for _, k := range tc.keys {
			last = h.press(k)
		}
		if _, ok := last.(tea.QuitMsg); !ok {
			t.Errorf("%v: no quit (last message %T)", tc.keys, last)
		}
		if !h.m.decided || h.m.result.Teardown != tc.teardown || h.m.result.Interrupted != tc.interrupted {
			t.Errorf("%v keep=%v: result %+v, want teardown=%v interrupted=%v", tc.keys, tc.keep, h.m.result, tc.teardown, tc.interrupted)
		}
	}
	// esc at the prompt goes back.
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.press("q")
	if !strings.Contains(h.frame(), "tear down now? step through it (enter/y) or all at once (c)") {
		t.Errorf("no prompt:\n%s", h.frame())
	}
	h.press("esc")
	if h.m.ui == uiConfirm || h.m.decided {
		t.Error("esc did not leave the prompt")
	}
}

func TestHelpKey(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.press("?")
	if h.m.ui != uiHelp || !strings.Contains(h.frame(), "tear down + quit") {
		t.Fatalf("? did not show the full help:\n%s", h.frame())
	}
	h.press("space") // closes the help, runs nothing
	if h.m.ui == uiHelp || h.state(1) != steps.Pending {
		t.Fatal("a key on the help screen should only close it")
	}
}

// TestRetryHintAgrees: on poststart-fails.yaml the hook's failure is one the
// kubelet recovers from (it kills the container and plans a restart): the
// step pane no longer says "r retries this step" there, which r refused
// ("no failed step to retry"), but what comes next. Where the pod did fail
// (the back-off that gave up), the hint is shown and r retries.
func TestRetryHintAgrees(t *testing.T) {
	h := newHarnessWith(t, loadBundle(t, scenarioFile("poststart-fails")), Options{}, func(so *steps.Options, _ *clock) {
		so.Settle, so.MaxRestarts, so.BackoffScale = 100*time.Millisecond, 1, 0.001
	})
	h.resize(120, 40)
	for h.m.nextID != 0 {
		h.press("space")
		s, _ := h.m.selected()
		if s.Kind != steps.KindPostStart || s.State != steps.Failed {
			continue
		}
		if _, failed := h.eng.Failed(); failed {
			t.Fatal("the hook's failure failed the pod; the scenario expects a restart")
		}
		d := h.detail()
		if strings.Contains(d, "r retries") || !strings.Contains(d, "the kubelet goes on") {
			t.Errorf("step %d %s, recovered from: the step pane says\n%s", s.ID, s.Name, d)
		}
		break
	}
	h.press("c")
	f, failed := h.eng.Failed()
	if !failed {
		t.Fatal("the pod did not fail after --max-restarts 1")
	}
	h.m.selectStep(f.ID)
	if d := h.detail(); !strings.Contains(d, "r retries this step") {
		t.Errorf("the failed step %d %s lacks the hint:\n%s", f.ID, f.Name, d)
	}
	h.press("r")
	if strings.Contains(h.m.flash, "no failed step") {
		t.Errorf("r after the hint: %q", h.m.flash)
	}
}

// TestPlanCounterIsEnded: the plan pane counts the steps that ended, a
// failed one too, as the live page does (steps.Ended): the TUI said
// "plan 22/31" while the page said "Steps 27 / 31".
func TestPlanCounterIsEnded(t *testing.T) {
	h := newHarness(t, loadBundle(t, "testdata/fail.yaml"), Options{})
	h.resize(120, 40)
	h.press("c")
	all := h.eng.Steps()
	if _, failed := h.eng.Failed(); !failed {
		t.Fatal("the pod did not fail")
	}
	want := fmt.Sprintf("plan %d/%d", steps.Ended(all), len(all))
	if f := h.frame(); !strings.Contains(f, want) {
		t.Errorf("no %q in the plan pane:\n%s", want, f)
	}
}

// TestServeURLOnStatusLine: with --serve the live page's address is on
// the status line (it was printed before the TUI opened, then hidden).
func TestServeURLOnStatusLine(t *testing.T) {
	const url = "http://127.0.0.1:8080/"
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{ServeURL: url})
	h.resize(120, 40)
	if f := h.frame(); !strings.Contains(f, "live page "+url) {
		t.Errorf("no live page address in\n%s", f)
	}
	h.press("c")
	if f := h.frame(); !strings.Contains(f, "live page "+url) {
		t.Errorf("no live page address at the end in\n%s", f)
	}
	h = newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	h.resize(120, 40)
	if f := h.frame(); strings.Contains(f, "live page") {
		t.Errorf("a live page without --serve in\n%s", f)
	}
}

// TestScenarioNamed: a built-in scenario's run names it in the header,
// and where its lesson is once it failed, outside predict mode too.
func TestScenarioNamed(t *testing.T) {
	sc, err := scenario.Get("poststart-fails")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, loadBundle(t, scenarioFile("poststart-fails")), Options{Scenario: &sc})
	h.resize(120, 40)
	if f := h.frame(); !strings.Contains(f, "scenario poststart-fails") {
		t.Errorf("the header does not name the scenario:\n%s", f)
	}
	h.press("c")
	if f := h.frame(); !strings.Contains(f, "the lesson: podstep scenarios show poststart-fails") {
		t.Errorf("no word of the lesson after the failure:\n%s", f)
	}
}
