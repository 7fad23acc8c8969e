package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/podstep/podstep/internal/cri"

	"github.com/podstep/podstep/internal/steps"
)

// TestTimelineFrames compares timeline screens of replays with testdata
// (-update rewrites them): before any step, after the sandbox, and at
// the end, for the hello pod on containerd 1.6 (a relist that waits) and
// a crash loop on the simulated runtime (back-offs that wait). The times
// are the recording's, so the bars are the same on every run.
func TestTimelineFrames(t *testing.T) {
	for _, rec := range []struct{ name, file, mid string }{
		{"hello", "hello.rec.gz", "g 7 enter"},
		{"crashloop", "crashloop.v1.rec.gz", "g 1 2 enter"},
	} {
		for _, sz := range sizes {
			suffix := fmt.Sprintf("-%dx%d", sz.w, sz.h)
			h := newReplayHarness(t, rec.file)
			h.resize(sz.w, sz.h)
			for _, f := range []struct{ name, keys string }{
				{"start", "t"},
				{"mid", rec.mid},
				{"end", "c c c c"},
				{"scrolled", "up up up"},
			} {
				t.Run(rec.name+"-"+f.name+suffix, func(t *testing.T) {
					h.keys(f.keys)
					checkGolden(t, "timeline-"+rec.name+"-"+f.name+suffix, h.frame())
				})
			}
		}
	}
}

// TestTimelineLive runs the hooks pod on the simulated runtime and checks
// the timeline as the run goes: empty before the first step, then one row
// per step that ran and one per CRI call it made, each with a bar; the
// relist's bar waits; t goes back to the panes; every line fits.
func TestTimelineLive(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	h.resize(100, 60)
	h.press("t")
	if f := h.frame(); !strings.Contains(f, "─ timeline ") || !strings.Contains(f, "no step has run yet") {
		t.Fatalf("the timeline before any step:\n%s", f)
	}
	h.resize(100, 60)
	if !strings.Contains(h.frame(), "q quit • t timeline") {
		t.Errorf("the help line lacks t timeline:\n%s", h.frame())
	}
	check := func(when string) {
		t.Helper()
		f := h.frame()
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) != 60 {
			t.Errorf("%s: %d lines", when, len(lines))
		}
		for i, l := range lines {
			if n := len([]rune(l)); n > 100 {
				t.Errorf("%s: line %d is %d wide", when, i, n)
			}
		}
		var ran, calls int
		for _, s := range h.eng.Steps() {
			if s.State == steps.Done || s.State == steps.Failed {
				ran++
				calls += len(s.Calls)
				row := lineWith(lines, fmt.Sprintf("%d %s ", s.ID, s.Name))
				if row == "" {
					t.Errorf("%s: no row for step %d %s:\n%s", when, s.ID, s.Name, f)
					continue
				}
				if !strings.ContainsAny(row, "█▒░") {
					t.Errorf("%s: step %d %s has no bar: %q", when, s.ID, s.Name, row)
				}
				if s.Kind == steps.KindRelist && !strings.Contains(row, "░") {
					t.Errorf("%s: the relist's bar shows no waiting: %q", when, row)
				}
				if s.Kind == steps.KindRunSandbox && !strings.Contains(row, "█") {
					t.Errorf("%s: run-sandbox's bar shows no runtime time: %q", when, row)
				}
			}
		}
		var callRows int
		for _, l := range lines {
			if strings.HasPrefix(l, "  ") && strings.Contains(l, "█") {
				callRows++
			}
		}
		if callRows != calls {
			t.Errorf("%s: %d call rows with a bar, %d calls made:\n%s", when, callRows, calls, f)
		}
		if ran > 0 && !strings.Contains(f, "so far ") {
			t.Errorf("%s: no split line:\n%s", when, f)
		}
	}
	for h.m.lastID < 6 {
		h.press("space")
	}
	check("after run-sandbox")
	h.press("c")
	if !h.eng.Finished() {
		t.Fatal("the pod was not created")
	}
	check("at the end")
	h.checkFits("the timeline at the end")
	h.press("t")
	if f := h.frame(); strings.Contains(f, "─ timeline ") || !strings.Contains(f, "─ pod ") {
		t.Errorf("t did not go back to the panes:\n%s", f)
	}
}

// TestTimelineFoldsIdle: a run stepped by hand, 25 s of reading between
// keys, whose steps took 4 ms: the live timeline spans the run's own time,
// each pause folded into an "idle (folded)" row and summed apart. It used
// to span the pauses too: 26 s on the axis for 1 s of work (issue 23). A
// replay, or a Live engine (the kubelet's gaps are its own), folds nothing;
// the gaps between steps that c runs are too short to fold.
func TestTimelineFoldsIdle(t *testing.T) {
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
	step := func(id, startMs int) steps.Step {
		return steps.Step{ID: id, Name: fmt.Sprintf("s%d", id), State: steps.Done, Kind: steps.KindRunSandbox,
			Started: at(startMs), Duration: time.Millisecond,
			Calls: []cri.Call{{Method: "RunPodSandbox", Start: at(startMs), Duration: 500 * time.Microsecond}}}
	}
	byHand := []steps.Step{step(1, 0), step(2, 25001), step(3, 50002), step(4, 50003)}
	for _, tc := range []struct {
		name       string
		fold       bool
		idleRows   int
		idle, span time.Duration
	}{
		{"live", true, 2, 50 * time.Second, 4 * time.Millisecond},
		{"replay", false, 0, 0, 50004 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newReplayHarness(t, "hello.v1.rec")
			h.resize(120, 30)
			run := timelineRun{steps: byHand, fold: tc.fold}
			rows, _, span, split := h.m.tl.rows(run)
			idle := 0
			for _, r := range rows {
				if r.idle {
					idle++
				}
			}
			if idle != tc.idleRows || split.idle != tc.idle || span != tc.span || split.wall != span {
				t.Errorf("%d idle rows, idle %s, span %s (wall %s); want %d, %s, %s", idle, split.idle, span, split.wall, tc.idleRows, tc.idle, tc.span)
			}
			f := ansi.Strip(strings.Join(h.m.tl.view(run, 120, 20), "\n"))
			if strings.Count(f, "idle (folded)") != tc.idleRows || strings.Contains(f, "between keys, folded") != (tc.idleRows > 0) {
				t.Errorf("the timeline does not show the folds:\n%s", f)
			}
		})
	}
}

func lineWith(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestTimelineProgram drives the real bubbletea loop: t shows the
// timeline while steps run, with the run-sandbox row and its call's bar.
func TestTimelineProgram(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(100, 40))
	tm.Send(keyPress("t"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("no step has run yet")) },
		teatest.WithDuration(5*time.Second))
	for deadline := time.Now().Add(10 * time.Second); h.countCalls("RunPodSandbox") == 0 && time.Now().Before(deadline); {
		tm.Send(keyPress("space"))
		time.Sleep(20 * time.Millisecond)
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("run-sandbox")) && bytes.Contains(b, []byte("RunPodSandbox")) && bytes.Contains(b, []byte("█"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyPress("ctrl+c"))
	tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestTimelineSplit: after the creation steps of a recording, the
// timeline's runtime and waiting times are the summary's cri_ms and
// wait_ms (the same split, made by `run` when it recorded), and podstep's
// own time is at most the summary's overhead_ms (which also counts the
// time between steps).
func TestTimelineSplit(t *testing.T) {
	for _, file := range []string{"hello.rec.gz", "init.rec.gz", "crashloop.v1.rec.gz", "sidecar-startup-probe.rec.gz"} {
		t.Run(file, func(t *testing.T) {
			h := newReplayHarness(t, file)
			<-h.p.Loaded()
			sum := h.p.Summary()
			if sum == nil {
				t.Fatal("no summary")
			}
			h.p.Seek(h.p.Len())
			n := 0
			for pos := 1; pos <= h.p.Len(); pos++ {
				if h.p.Steps()[h.p.RunID(pos)-1].Stage != steps.StageTeardown {
					n = pos
				}
			}
			h.p.Seek(n)
			h.m.moved()
			_, _, _, split := h.m.tl.rows(h.m.timeline())
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			// Each recorded duration is rounded to the microsecond: allow that
			// per call.
			tm := sum.Timing
			tol := 0.01 + 0.001*float64(tm.Calls)
			near := func(a, b float64) bool { return a-b < tol && b-a < tol }
			if !near(ms(split.runtime), tm.CRIMs) || !near(ms(split.wait), tm.WaitMs) || ms(split.own) > tm.OverheadMs+0.01 {
				t.Errorf("after %d steps: runtime %.3f ms, waiting %.3f ms, podstep %.3f ms; the summary: cri %.3f, wait %.3f, overhead %.3f",
					n, ms(split.runtime), ms(split.wait), ms(split.own), tm.CRIMs, tm.WaitMs, tm.OverheadMs)
			}
		})
	}
}

// BenchmarkTimelineView renders the timeline of the crash loop recording
// (52 rows: every step and call) at 120x40, as each keypress or spinner
// tick does.
func BenchmarkTimelineView(b *testing.B) {
	h := newReplayHarness(b, "crashloop.v1.rec.gz")
	h.resize(120, 40)
	h.keys("c c c c t")
	if !strings.Contains(h.frame(), "22 stop-containers") {
		b.Fatalf("not the end's timeline:\n%s", h.frame())
	}
	for b.Loop() {
		_ = h.m.View()
	}
}
