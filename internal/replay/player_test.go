package replay

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

var recordings = []string{"hello.v1.rec", "crashloop.v1.rec.gz"}

func open(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "recordings", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func load(t testing.TB, name string) *Player {
	t.Helper()
	p, err := Load(open(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if p.Damage() != nil {
		t.Fatalf("%s: %v", name, p.Damage())
	}
	return p
}

// recorded reads the step objects of a recording straight from the file,
// and the step-started lines, in order.
func recorded(t *testing.T, name string) ([]report.StepJSON, []record.StepStarted) {
	t.Helper()
	rd, err := record.NewReader(open(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []report.StepJSON
	var started []record.StepStarted
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, started
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Step != nil {
			out = append(out, *ev.Step)
		}
		if ev.StepStarted != nil {
			started = append(started, *ev.StepStarted)
		}
	}
}

// check says how the player's state at its position differs from the
// recording's: the pod after the last step, every event so far, the last
// step as it ended and the next one with the requests it sent.
func check(t *testing.T, p *Player, want []report.StepJSON, started []record.StepStarted, how string) {
	t.Helper()
	pos := p.Position()
	pod := p.PodState()
	var events int
	for _, s := range want[:pos] {
		events += len(s.Events)
	}
	if len(pod.Events) != events {
		t.Errorf("%s, at %d: %d events, want %d", how, pos, len(pod.Events), events)
	}
	if pos > 0 {
		w := want[pos-1]
		if w.Pod != nil && (!reflect.DeepEqual(pod.Status, w.Pod.Status) || pod.Display != w.Pod.Display || pod.Ready != w.Pod.Ready) {
			t.Errorf("%s, at %d: pod %s %s, want %s %s as recorded after step %d", how, pos, pod.Display, pod.Ready, w.Pod.Display, w.Pod.Ready, w.ID)
		}
		got := p.Steps()[w.ID-1]
		if got.Name != w.Name || got.State != w.State || got.Result.Summary != w.Summary || len(got.Calls) != len(w.Calls) {
			t.Errorf("%s, at %d: step %d is %s %s %q (%d calls), want %s %s %q (%d calls)", how, pos, w.ID,
				got.Name, got.State, got.Result.Summary, len(got.Calls), w.Name, w.State, w.Summary, len(w.Calls))
		}
		for i, c := range got.Calls {
			if c.Method != w.Calls[i].Method || c.ErrorMessage() != w.Calls[i].Error {
				t.Errorf("%s, at %d: call %d %s %q, want %s %q", how, pos, i, c.Method, c.ErrorMessage(), w.Calls[i].Method, w.Calls[i].Error)
			}
		}
	} else if pod.Display == "" {
		t.Errorf("%s, at 0: no pod before the first step", how)
	}
	next, ok := p.NextStep()
	if ok != (pos < len(want)) {
		t.Fatalf("%s, at %d: next step %v, want %v", how, pos, ok, pos < len(want))
	}
	if ok {
		if next.ID != want[pos].ID || next.Name != want[pos].Name || next.State != steps.Pending {
			t.Errorf("%s, at %d: next %d %s %s, want %d %s pending", how, pos, next.ID, next.Name, next.State, want[pos].ID, want[pos].Name)
		}
		var methods []string
		for _, r := range next.Requests {
			methods = append(methods, r.Method)
		}
		var wm []string
		for _, r := range started[pos].Requests {
			wm = append(wm, r.Method)
		}
		if strings.Join(methods, ",") != strings.Join(wm, ",") {
			t.Errorf("%s, at %d: next step's requests %v, want %v", how, pos, methods, wm)
		}
	}
}

// TestPositions walks each recording forward with Next, back with Seek
// and by jumps, and checks each position against the recorded step lines.
func TestPositions(t *testing.T) {
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			want, started := recorded(t, name)
			p := load(t, name)
			if p.Len() != len(want) {
				t.Fatalf("Len %d, want %d", p.Len(), len(want))
			}
			var seen []steps.EventKind
			cancel := p.Subscribe(func(ev steps.Event) { seen = append(seen, ev.Kind) })
			check(t, p, want, started, "start")
			for p.Position() < p.Len() {
				if _, err := p.Next(context.Background()); err != nil {
					t.Fatal(err)
				}
				check(t, p, want, started, "forward")
			}
			cancel()
			if _, err := p.Next(context.Background()); !errors.Is(err, steps.ErrNoStep) {
				t.Errorf("Next at the end: %v, want ErrNoStep", err)
			}
			if n := strings.Count(strings.Join(kinds(seen), " "), string(steps.StepDone)); n != len(want) {
				t.Errorf("%d step-done events, want %d", n, len(want))
			}
			for pos := p.Len() - 1; pos >= 0; pos-- {
				p.Seek(pos)
				check(t, p, want, started, "back")
			}
			for _, pos := range []int{len(want) / 2, 3, len(want), 0, 7} {
				p.Seek(pos)
				check(t, p, want, started, "seek")
			}
		})
	}
}

func kinds(ks []steps.EventKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// TestPlanChanges: the plan at a position is the one the run had then (a
// restart's steps appear once it was planned, skipped steps once skipped).
func TestPlanChanges(t *testing.T) {
	p := load(t, "crashloop.v1.rec.gz")
	names := func(pos int) string {
		p.Seek(pos)
		var out []string
		for _, s := range p.Steps() {
			out = append(out, s.Name+":"+string(s.State))
		}
		return strings.Join(out, " ")
	}
	if got := names(0); strings.Count(got, ":pending") != 11 || strings.Contains(got, "backoff") {
		t.Errorf("at 0: %s", got)
	}
	if got := names(11); !strings.HasSuffix(got, "relist:failed backoff/app:pending pull/app:pending create/app:pending start/app:pending relist:pending") {
		t.Errorf("at 11: %s", got)
	}
	if got := names(17); !strings.Contains(got, "backoff/app:failed pull/app:skipped") {
		t.Errorf("at 17: %s", got)
	}
	if got := names(p.Len()); strings.Count(got, "pending") != 0 || !strings.HasSuffix(got, "remove-dirs:done") {
		t.Errorf("at the end: %s", got)
	}
}

// TestFailedAndBreaks: a failure the kubelet recovers from is not the
// pod's; the back-off that gave up is. c stops there and at breakpoints,
// C goes back to them.
func TestFailedAndBreaks(t *testing.T) {
	p := load(t, "crashloop.v1.rec.gz")
	p.Seek(11) // relist found the container exited: it restarts
	if f, ok := p.Failed(); ok {
		t.Errorf("at 11: failed at %d %s, want not failed", f.ID, f.Name)
	}
	p.Seek(0)
	if err := p.Continue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f, ok := p.Failed(); p.Position() != 17 || !ok || f.Name != "backoff/app" {
		t.Errorf("c from the start stopped at %d (failed %v %s), want 17 backoff/app", p.Position(), ok, f.Name)
	}
	p.Seek(p.Len())
	if f, ok := p.Failed(); !ok || f.Name != "backoff/app" {
		t.Errorf("at the end: failed %v %s, want backoff/app", ok, f.Name)
	}
	if err := p.Retry(); !errors.Is(err, ErrRetry) {
		t.Errorf("Retry: %v", err)
	}
	if !p.ToggleBreakStage(steps.StageContainers) {
		t.Fatal("the breakpoint was not set")
	}
	p.ContinueBack()
	if p.Position() != 7 {
		t.Errorf("C from the end: at %d, want 7 (before pull/app, the first step of containers)", p.Position())
	}
	p.Seek(0)
	if err := p.Continue(context.Background()); err != nil {
		t.Fatalf("c from the start: %v", err)
	}
	if p.Position() != 7 {
		t.Errorf("c from the start: at %d, want 7", p.Position())
	}
	p.ToggleBreakStep(13)
	if err := p.Continue(context.Background()); err != nil {
		t.Fatalf("c from 7: %v", err)
	}
	if p.Position() != 12 {
		t.Errorf("c from 7: at %d, want 12 (before step 13)", p.Position())
	}
	p.ContinueBack()
	if p.Position() != 7 {
		t.Errorf("C from 12: at %d, want 7", p.Position())
	}
	p.ContinueBack()
	if p.Position() != 0 {
		t.Errorf("C from 7: at %d, want 0", p.Position())
	}
}

// TestLogs: a container's log as recorded up to the position, of its latest attempt.
func TestLogs(t *testing.T) {
	p := load(t, "crashloop.v1.rec.gz")
	for _, c := range []struct {
		pos  int
		want string
		err  error
	}{
		{8, "", steps.ErrNoContainer},
		{9, "", nil},
		{10, "crashing", nil},
		{14, "", nil},
		{15, "crashing", nil},
	} {
		p.Seek(c.pos)
		lines, err := p.ContainerLog("app", 100)
		var got []string
		for _, l := range lines {
			got = append(got, l.Text)
		}
		if !errors.Is(err, c.err) || strings.Join(got, "\n") != c.want {
			t.Errorf("at %d: %q %v, want %q %v", c.pos, got, err, c.want, c.err)
		}
	}
}

// TestDamaged: a recording cut inside a step replays up to there and says why.
func TestDamaged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "recordings", "hello.v1.rec"))
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(b), `{"type":"step","id":6,`) + 40
	p, err := Load(strings.NewReader(string(b[:cut])))
	if err != nil {
		t.Fatal(err)
	}
	var de *record.DamageError
	if !errors.As(p.Damage(), &de) || p.Len() != 5 {
		t.Errorf("cut in step 6: %d steps, damage %v; want 5 and a *record.DamageError", p.Len(), p.Damage())
	}
	p.Seek(5)
	if s, ok := p.NextStep(); !ok || s.Name != "run-sandbox" {
		t.Errorf("next after the damage: %v %s", ok, s.Name)
	}
}

// TestChangesOfOldRecordings: a v1 recording made before steps had Changes
// gets the engine's diff of the pod before and after each step.
func TestChangesOfOldRecordings(t *testing.T) {
	p := load(t, "crashloop.v1.rec.gz")
	p.Seek(17)
	s := p.Steps()[16]
	if got := podstate.FormatChanges(s.Changes); !strings.Contains(got, "CrashLoopBackOff") {
		t.Errorf("step 17 %s changed %q, want the pod's CrashLoopBackOff", s.Name, got)
	}
}

// TestAllRecordings replays every recording under testdata/recordings
// forward to its end and back to its start.
func TestAllRecordings(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "recordings", "*.rec*"))
	if len(files) < 2 {
		t.Fatalf("%d recordings", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, started := recorded(t, filepath.Base(f))
			p := load(t, filepath.Base(f))
			for p.Position() < p.Len() {
				if _, err := p.Next(context.Background()); err != nil {
					t.Fatalf("Next at %d: %v", p.Position(), err)
				}
				check(t, p, want, started, "forward")
			}
			for p.Position() > 0 {
				p.Seek(p.Position() - 1)
				check(t, p, want, started, "back")
			}
		})
	}
}
