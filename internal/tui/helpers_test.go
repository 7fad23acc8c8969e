package tui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/sim/simtest"

	"github.com/podstep/podstep/internal/golden"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/steps"
)

// epoch is the fake clock's start: frames show fixed times.
var epoch = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// clock is a fake clock that moves 1 ms each time it is read, or, once
// real is set (before the engine starts), the wall clock.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool
}

func (c *clock) Now() time.Time {
	if c.real {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// harness is a model on an engine on the simulated runtime.
type harness struct {
	t      testing.TB
	m      *model
	eng    *steps.Engine
	client *cri.Client
	root   string
	// late gets a batch of commands that exec gave up waiting for: on a
	// loaded machine the goroutine running tea.Batch's own func can start
	// after exec's 20ms, and dropping the batch lost a run's work (its
	// WaitGroup.Add without the Done: waitIdle timed out, then close hung).
	late chan tea.Msg
}

// rootPrefix is the fixed-length prefix of every harness root dir, so
// paths in frames can be masked without moving anything.
const rootPrefix = "/tmp/podstep-tui-"

func newRoot(t testing.TB) string {
	b := make([]byte, 4)
	rand.Read(b)
	dir := rootPrefix + hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Join(dir, "sim"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func loadBundle(t testing.TB, file string) *manifest.Bundle {
	t.Helper()
	b, err := manifest.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newHarness builds the engine for bundle as the TUI hook does, on the
// simulated runtime, with a fake clock; durations are masked.
func newHarness(t testing.TB, b *manifest.Bundle, o Options) *harness {
	t.Helper()
	return newHarnessWith(t, b, o, nil)
}

// newHarnessWith is newHarness with the engine's options (and its and the
// runtime's clock) changed by set.
func newHarnessWith(t testing.TB, b *manifest.Bundle, o Options, set func(*steps.Options, *clock)) *harness {
	t.Helper()
	root := newRoot(t)
	clk := &clock{t: epoch}
	client := simtest.Client(t, sim.Options{Clock: clk.Now, InitRunTime: 20 * time.Millisecond})
	so := steps.Options{
		Config: podcfg.Options{RootDir: filepath.Join(root, "root"), LogDir: filepath.Join(root, "logs"),
			CgroupDriver: "cgroupfs", ClusterDomain: "cluster.local"},
		PollInterval: 10 * time.Millisecond, Now: clk.Now, Simulated: true,
	}
	if set != nil {
		set(&so, clk)
	}
	eng := steps.New(b, client, so)
	o.Runtime = render.Runtime{Endpoint: "unix:///run/podstep-sim.sock", Simulated: true}
	fixed := epoch
	o.Now = func() time.Time { return fixed }
	m := newModel(context.Background(), eng, o)
	m.fmtDur = func(time.Duration) string { return "1.0ms" }
	h := &harness{t: t, m: m, eng: eng, client: client, root: root}
	t.Cleanup(func() {
		m.close()
		// before simtest's cleanup stops the runtime
		if err := eng.Teardown(context.Background()); err != nil {
			t.Logf("teardown: %v", err)
		}
	})
	return h
}

// key builds a keypress as bubbletea reports it.
func keyPress(s string) tea.KeyPressMsg {
	switch s {
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEsc}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// press sends a key and, when it starts a run, waits until the run is
// over, feeding every engine event to the model. It returns the command
// the key produced, once run (tea.Quit's message, or nil).
func (h *harness) press(k string) tea.Msg {
	h.t.Helper()
	msg := h.pressAsync(k)
	h.waitIdle()
	return msg
}

// pressAsync sends a key and starts what it runs, without waiting.
func (h *harness) pressAsync(k string) tea.Msg {
	_, cmd := h.m.Update(keyPress(k))
	return h.exec(cmd)
}

// exec runs a command: engine work in the background, the spinner's first
// tick at once; timed ticks are dropped.
func (h *harness) exec(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		switch msg := msg.(type) {
		case tea.BatchMsg:
			var out tea.Msg
			for _, c := range msg {
				if r := h.exec(c); r != nil {
					out = r
				}
			}
			return out
		case tea.QuitMsg:
			return msg
		case nil:
			return nil
		default:
			h.m.Update(msg)
			return nil
		}
	case <-time.After(20 * time.Millisecond):
		// Engine work (it reports on the feed), a timed tick, or a batch
		// that was slow to start: waitIdle runs that one.
		if h.late == nil {
			h.late = make(chan tea.Msg, 16)
		}
		late := h.late
		go func() {
			if msg, ok := (<-done).(tea.BatchMsg); ok {
				late <- msg
			}
		}()
		return nil
	}
}

// waitIdle feeds engine events to the model until no run is in flight.
func (h *harness) waitIdle() {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for h.m.live.running.busy {
		select {
		case msg := <-h.m.events:
			_, cmd := h.m.Update(msg)
			// The run's end: this message, or one the update drained.
			if !h.m.live.running.busy {
				if q := h.exec(cmd); q != nil {
					if _, ok := q.(tea.QuitMsg); ok {
						return
					}
				}
			}
		case msg := <-h.late:
			h.exec(func() tea.Msg { return msg })
		case <-deadline:
			h.t.Fatal("engine still running after 20s")
		}
	}
}

// resize sets the window size.
func (h *harness) resize(w, ht int) { h.m.Update(tea.WindowSizeMsg{Width: w, Height: ht}) }

// frame is the screen as plain text, root dir masked.
func (h *harness) frame() string {
	s := ansi.Strip(h.m.render())
	s = strings.ReplaceAll(s, h.root, rootPrefix+"XXXXXXXX")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// fitSizes are the windows the fit checks try: the smallest the layout is
// designed for (minW x minH), a common terminal, and a wide one.
var fitSizes = []struct{ w, h int }{{minW, minH}, {80, 24}, {200, 60}}

// checkFits resizes the window to each of sizes (fitSizes when none) and
// checks the frame has exactly its height in lines, none wider than it;
// when says where the run is, for the error.
func (h *harness) checkFits(when string, sizes ...struct{ w, h int }) {
	h.t.Helper()
	if len(sizes) == 0 {
		sizes = fitSizes
	}
	for _, sz := range sizes {
		h.resize(sz.w, sz.h)
		lines := strings.Split(strings.TrimSuffix(h.frame(), "\n"), "\n")
		if len(lines) != sz.h {
			h.t.Errorf("%s at %dx%d: %d lines", when, sz.w, sz.h, len(lines))
		}
		for i, l := range lines {
			if n := len([]rune(l)); n > sz.w {
				h.t.Errorf("%s at %dx%d: line %d is %d wide: %q", when, sz.w, sz.h, i, n, l)
			}
		}
	}
}

func (h *harness) state(id int) steps.State { return h.eng.Steps()[id-1].State }

func (h *harness) countCalls(method string) int {
	n := 0
	for _, c := range h.client.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// checkGolden compares a frame with testdata/name.golden (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got)
}

func repoFile(p string) string { return filepath.Join("..", "..", p) }

// scenarioFile is the built-in scenario name's manifest: under
// internal/scenario/data once the scenarios are embedded, testdata/scenarios before.
func scenarioFile(name string) string {
	if f := repoFile("internal/scenario/data/" + name + ".yaml"); fileExists(f) {
		return f
	}
	return repoFile("testdata/scenarios/" + name + ".yaml")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// detail is the whole step pane content as plain text.
func (h *harness) detail() string {
	return ansi.Strip(strings.Join(h.m.pane.lines(h.m.view(), 200), "\n"))
}
