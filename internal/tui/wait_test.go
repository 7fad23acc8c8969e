package tui

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/podstep/podstep/internal/steps"
)

// crashloop is the crash loop scenario with a relist, two restarts allowed
// and the back-offs shortened by scale.
// real runs the engine and the runtime on the wall clock.
func crashloop(t testing.TB, scale float64, real bool, o Options) *harness {
	return newHarnessWith(t, loadBundle(t, scenarioFile("crashloop")), o, func(so *steps.Options, clk *clock) {
		so.Settle, so.MaxRestarts, so.BackoffScale = 200*time.Millisecond, 2, scale
		clk.real = real
	})
}

// statusLine is the frame's status line (the one above the help bar).
func statusLine(frame string) string {
	lines := strings.Split(strings.TrimSuffix(frame, "\n"), "\n")
	return lines[len(lines)-2]
}

// TestContinueFollowsRestarts: during c, the steps a restart inserts are
// shown as they run: the status line names the running back-off and the
// plan lists it. The TUI used to keep the plan it read before c, so from
// the first inserted step on the status said "continuing: " and nothing
// else, and the plan and step pane stayed at the relist (issue 23).
func TestContinueFollowsRestarts(t *testing.T) {
	h := crashloop(t, 0.02, false, Options{})
	h.resize(120, 40)
	h.pressAsync("c")
	backoffs := 0
	waitRE := regexp.MustCompile(`back-off 10s for app, \d+\.\ds left \(--backoff-scale 0\.02\)`)
	for deadline := time.After(20 * time.Second); h.m.live.running.busy; {
		var msg tea.Msg
		select {
		case msg = <-h.m.events:
		case <-deadline:
			t.Fatal("c did not end")
		}
		ev, ok := msg.(engineEventMsg)
		if !ok {
			_, cmd := h.m.Update(msg)
			h.exec(cmd)
			continue
		}
		h.m.event(ev.ev) // one at a time (Update applies what is queued)
		if ev.ev.Kind == steps.StepStarted && ev.ev.Step.Kind == steps.KindBackoff {
			backoffs++
			f := h.frame()
			if want := "continuing: " + ev.ev.Step.Name; !strings.Contains(statusLine(f), ev.ev.Step.Name) {
				t.Errorf("step %d %s runs; the status line lacks %q:\n%s", ev.ev.Step.ID, ev.ev.Step.Name, want, f)
			}
			if s, _ := h.m.selected(); s.ID != ev.ev.Step.ID {
				t.Errorf("step %d runs; the step pane shows step %d", ev.ev.Step.ID, s.ID)
			}
		}
		if ev.ev.Kind == steps.Waiting && ev.ev.Wait.Delay == 10*time.Second {
			f := h.frame()
			if !waitRE.MatchString(statusLine(f)) {
				t.Errorf("during the back-off the status line lacks the countdown:\n%s", f)
			}
			if !waitRE.MatchString(strings.Join(strings.Fields(h.detail()), " ")) {
				t.Errorf("during the back-off the step pane lacks the countdown:\n%s", h.detail())
			}
			// At 80 columns the status line keeps the countdown and esc,
			// and leaves the flag to the step pane.
			h.resize(80, 24)
			if st := statusLine(h.frame()); !strings.Contains(st, "s left  esc cancels") || strings.Contains(st, "--backoff-scale") {
				t.Errorf("at 80 columns, during the back-off: %q", st)
			}
			h.resize(120, 40)
		}
	}
	if backoffs < 2 {
		t.Errorf("%d back-off steps ran, want at least 2", backoffs)
	}
}

// frameLog is a model that keeps every frame the program asks it for,
// with the time, for TestBackoffRedraws.
type frameLog struct {
	*model
	mu     sync.Mutex
	frames []timedFrame
}

type timedFrame struct {
	at     time.Time
	status string
}

func (f *frameLog) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.model.Update(msg)
	return f, cmd
}

func (f *frameLog) View() tea.View {
	v := f.model.View()
	f.mu.Lock()
	f.frames = append(f.frames, timedFrame{time.Now(), statusLine(ansi.Strip(f.render()) + "\n")})
	f.mu.Unlock()
	return v
}

// TestBackoffRedraws drives the real bubbletea loop through the back-offs
// of a crash loop (10 s and 20 s at scale 0.3, on the wall clock, so
// that the first waits 3 s less the time since the exit): the program redraws at
// least once a second while it waits, and the countdown goes down (the bar: the TUI redraws at
// least once a second during any c, wait or back-off).
func TestBackoffRedraws(t *testing.T) {
	h := crashloop(t, 0.3, true, Options{})
	h.m.now = time.Now
	h.m.fmtDur = func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	fl := &frameLog{model: h.m}
	tm := teatest.NewTestModel(t, fl, teatest.WithInitialTermSize(120, 40))
	tm.Send(keyPress("c"))
	// Until the program showed the end (the give-up): it may run behind
	// the engine on a loaded machine.
	ended := func() bool {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		n := len(fl.frames)
		return n > 0 && strings.Contains(fl.frames[n-1].status, "failed: CrashLoopBackOff")
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !ended(); {
		time.Sleep(50 * time.Millisecond)
	}
	tm.Send(keyPress("ctrl+c"))
	tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))

	fl.mu.Lock()
	defer fl.mu.Unlock()
	left := regexp.MustCompile(`back-off (\d+)s for app, (\d+\.\d)s left`)
	var during []timedFrame
	for _, f := range fl.frames {
		if left.MatchString(f.status) {
			during = append(during, f)
		}
	}
	if len(during) < 2 {
		for _, s := range h.eng.Steps() {
			t.Logf("step %d %s %s: %s", s.ID, s.Name, s.State, s.Result.Summary)
		}
		t.Logf("%d frames, the last status: %s", len(fl.frames), fl.frames[len(fl.frames)-1].status)
		for i, f := range fl.frames {
			if i == 0 || f.status != fl.frames[i-1].status {
				t.Logf("%s %s", f.at.Format("05.000"), f.status)
			}
		}
		t.Fatalf("%d frames showed a back-off's countdown", len(during))
	}
	values := map[string]bool{}
	for i, f := range during {
		m := left.FindStringSubmatch(f.status)
		values[m[1]+"/"+m[2]] = true
		if i == 0 {
			continue
		}
		if gap := f.at.Sub(during[i-1].at); gap > time.Second {
			t.Errorf("no frame for %s during a back-off", gap)
		}
		if p := left.FindStringSubmatch(during[i-1].status); p[1] == m[1] && p[2] < m[2] {
			t.Errorf("the countdown went up: %s then %s", p[2], m[2])
		}
	}
	if len(values) < 3 {
		t.Errorf("the countdown showed %d values: %v", len(values), values)
		for i, f := range fl.frames {
			if i == 0 || f.status != fl.frames[i-1].status {
				t.Logf("%s %s", f.at.Format("05.000"), f.status)
			}
		}
	}
}

// TestUpdateAppliesQueuedEvents: one update applies every event queued
// behind the one it got, up to the run's end, so that a busy machine
// draws one frame for them all instead of falling behind the engine (on a
// loaded machine a back-off's countdown was drawn after it had ended).
func TestUpdateAppliesQueuedEvents(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.pressAsync("c")
	h.m.run.wg.Wait() // the run ended: its events and its end are queued
	queued := len(h.m.events)
	_, cmd := h.m.Update(<-h.m.events)
	if h.m.live.running.busy || len(h.m.events) != 0 {
		t.Fatalf("one update of %d queued messages left %d, busy %v", queued, len(h.m.events), h.m.live.running.busy)
	}
	h.exec(cmd)
	if !h.eng.Finished() || h.m.nextID != 0 || !strings.Contains(h.frame(), "all steps done") {
		t.Errorf("after the update:\n%s", h.frame())
	}
}
