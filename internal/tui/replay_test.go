package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/replay"
)

// replayHarness is a model on a recording played back. Times in frames are
// shown in UTC, durations masked.
type replayHarness struct {
	*harness
	p *replay.Player
}

func newReplayHarness(t testing.TB, name string) *replayHarness {
	t.Helper()
	f, err := os.Open(repoFile("testdata/recordings/" + name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := replay.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	h := p.Header()
	fixed := epoch
	m := newModel(context.Background(), p, Options{
		Now: func() time.Time { return fixed },
		Replay: &ReplayInfo{File: name, Recorded: h.Recorded, Host: h.Host, Podstep: h.Podstep,
			Runtime: h.Runtime.Name + " " + h.Runtime.Version, Simulated: h.Runtime.Simulated},
	})
	m.fmtDur = func(time.Duration) string { return "1.0ms" }
	t.Cleanup(m.close)
	return &replayHarness{harness: &harness{t: t, m: m, root: "/nonexistent"}, p: p}
}

// press sends one key; a replay runs nothing in the background. It
// returns the message of the command the key produced (tea.Quit's), if any.
func (h *replayHarness) press(k string) tea.Msg {
	msg := keyPress(k)
	switch k {
	case "left":
		msg = tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		msg = tea.KeyPressMsg{Code: tea.KeyRight}
	case "backspace":
		msg = tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	_, cmd := h.m.Update(msg)
	if cmd == nil {
		return nil
	}
	return cmd()
}

// keys presses each key of a space-separated list.
func (h *replayHarness) keys(ks string) {
	for _, k := range strings.Fields(ks) {
		h.press(k)
	}
}

// TestReplayFrames compares whole screens of replays with testdata
// (-update rewrites them): the first frame with its REPLAY header, after 3
// steps forward, after 2 back, after g N.
func TestReplayFrames(t *testing.T) {
	for _, rec := range []struct{ name, file, gotoKeys string }{
		{"hello", "hello.v1.rec", "g 1 0 enter"},
		{"crashloop", "crashloop.v1.rec.gz", "g 1 7 enter"},
	} {
		for _, sz := range sizes {
			suffix := fmt.Sprintf("-%dx%d", sz.w, sz.h)
			h := newReplayHarness(t, rec.file)
			h.resize(sz.w, sz.h)
			for _, f := range []struct{ name, keys string }{
				{"first", ""},
				{"forward3", "space n right"},
				{"back2", "p left"},
				{"goto", rec.gotoKeys},
			} {
				t.Run(rec.name+"-"+f.name+suffix, func(t *testing.T) {
					h.keys(f.keys)
					checkGolden(t, "replay-"+rec.name+"-"+f.name+suffix, h.frame())
				})
			}
		}
	}
}

// TestReplayKeys: the position each replay key leads to, and what the
// keys a replay has not do.
func TestReplayKeys(t *testing.T) {
	h := newReplayHarness(t, "crashloop.v1.rec.gz")
	for _, c := range []struct {
		keys  string
		pos   int
		flash string
	}{
		{"space space space", 3, ""},
		{"left p", 1, ""},
		{"p", 0, ""},
		{"p", 0, "at the start of the recording"},
		{"c", 17, ""}, // the back-off that gave up: the pod failed there
		{"r", 17, "retry is not available in a replay"},
		{"C", 0, ""},
		{"g 2 2 enter", 18, ""}, // steps 18-21 were skipped: 22 ran 18th
		{"g 9 9 enter", 18, "step 99 never ran"},
		{"g 5 esc", 18, ""},
		{"g 3 backspace 4 enter", 4, ""},
		{"g 0 enter", 0, ""},
		{"c c", 22, ""},
		{"space", 22, "end of the recording"},
	} {
		h.keys(c.keys)
		if h.p.Position() != c.pos || !strings.Contains(h.m.flash, c.flash) {
			t.Errorf("after %q: at %d, flash %q; want %d, %q", c.keys, h.p.Position(), h.m.flash, c.pos, c.flash)
		}
	}
	// A breakpoint on the containers stage: c and C stop before its first step.
	h.keys("g 0 enter")
	h.m.plan.cursor = 0
	for h.m.plan.rows[h.m.plan.cursor].stage != "containers" {
		h.m.plan.cursor++
	}
	h.keys("b c")
	if h.p.Position() != 7 {
		t.Errorf("c to the containers breakpoint: at %d, want 7", h.p.Position())
	}
	h.keys("g 1 2 enter C")
	if h.p.Position() != 7 {
		t.Errorf("C back to the containers breakpoint: at %d, want 7", h.p.Position())
	}
	if msg := h.press("q"); msg == nil {
		t.Error("q did not quit at once")
	} else if _, ok := msg.(tea.QuitMsg); !ok || h.m.result.Teardown {
		t.Errorf("q: %T, teardown %v; want quit, no teardown", msg, h.m.result.Teardown)
	}
}

// TestReplayQuitFromHelp: q on a replay's help screen quits at once, as q
// does elsewhere in a replay. It used to open the live run's quit prompt,
// which a replay's status line never shows: the screen sat waiting for a
// hidden y/n.
func TestReplayQuitFromHelp(t *testing.T) {
	h := newReplayHarness(t, "hello.v1.rec")
	h.press("?")
	msg := h.press("q")
	if _, ok := msg.(tea.QuitMsg); !ok || h.m.result.Teardown || !h.m.decided {
		t.Errorf("? q: %T, teardown %v, decided %v; want quit, no teardown", msg, h.m.result.Teardown, h.m.decided)
	}
}

// TestReplayHelp: the replay's keys are in its help, and only there.
func TestReplayHelp(t *testing.T) {
	h := newReplayHarness(t, "hello.v1.rec")
	h.resize(120, 40)
	bar := h.frame()
	h.press("?")
	full := h.frame()
	for _, want := range []string{"p/← back", "g go to step", "C back to break"} {
		if !strings.Contains(bar, want) {
			t.Errorf("the help bar lacks %q", want)
		}
	}
	for _, want := range []string{"step back", "go to step N", "back to breakpoint"} {
		if !strings.Contains(full, want) {
			t.Errorf("the help screen lacks %q", want)
		}
	}
	live := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	live.resize(120, 40)
	live.press("?")
	if f := live.frame(); strings.Contains(f, "step back") || strings.Contains(f, "REPLAY") {
		t.Errorf("a live run shows replay keys:\n%s", f)
	}
}

// TestReplayFramesFit: every line of every frame fits the window, through
// a whole replay of each recording under testdata/recordings forward and
// back, in every view.
func TestReplayFramesFit(t *testing.T) {
	files, _ := filepath.Glob(repoFile("testdata/recordings/*.rec*"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { replayFits(t, filepath.Base(f)) })
	}
}

func replayFits(t *testing.T, name string) {
	h := newReplayHarness(t, name)
	for _, dir := range []string{"space", "p"} {
		for i := 0; i <= h.p.Len(); i++ {
			h.press(dir)
			for _, k := range []string{"tab", "tab", "tab"} {
				h.press(k)
				h.checkFits(fmt.Sprintf("%s %d %s", dir, h.p.Position(), h.m.pane.mode))
			}
		}
	}
}

// TestReplayWhileLoading presses keys while the recording is still being
// read (run it with -race): a key that needs a step not read yet waits
// for it, and the status says + until the whole file is read.
func TestReplayWhileLoading(t *testing.T) {
	data, err := os.ReadFile(repoFile("testdata/recordings/crashloop.v1.rec.gz"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := replay.Open(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := newModel(context.Background(), p, Options{Replay: &ReplayInfo{}})
	h := &replayHarness{harness: &harness{t: t, m: m, root: "/nonexistent"}, p: p}
	h.keys("space space g 2 2 enter p")
	if p.Position() != 17 {
		t.Errorf("at %d, want 17", p.Position())
	}
	<-p.Loaded()
	if s := h.frame(); !strings.Contains(s, "REPLAY 17/22 ") {
		t.Errorf("status once read:\n%s", s)
	}
	if msg := m.waitLoaded()(); msg != (replayLoadedMsg{}) {
		t.Errorf("waitLoaded: %v", msg)
	}
}

// TestReplayDamaged: a recording cut inside a step replays up to there,
// and its last position says where and why it ends.
func TestReplayDamaged(t *testing.T) {
	data, err := os.ReadFile(repoFile("testdata/recordings/hello.v1.rec"))
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(data), `{"type":"step","id":9,`) + 30
	p, err := replay.Load(strings.NewReader(string(data[:cut])))
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(context.Background(), p, Options{Replay: &ReplayInfo{}})
	h := &replayHarness{harness: &harness{t: t, m: m, root: "/nonexistent"}, p: p}
	h.resize(200, 30)
	h.keys("c")
	if s := h.frame(); !strings.Contains(s, "REPLAY 8/8 the recording ends here: line ") || !strings.Contains(s, "the file ends inside this line") {
		t.Errorf("the end of a cut recording:\n%s", s)
	}
}
