package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podstep/podstep/internal/steps"
)

// Live is an engine that moves by itself: `podstep proxy` shows a real
// kubelet's calls as they come, and the kubelet, not a keypress, runs the
// steps (Next and Continue only let held calls go). Changed signals that
// the engine has something new (a step, a held call, a second off a held
// call's deadline): the TUI re-reads it, and the list of steps may grow.
type Live interface {
	Changed() <-chan struct{}
}

// NodeNoter is a Live engine that also says what the node as a whole is
// stuck on (podstep proxy: the kubelet's PLEG relists are late, or PLEG is
// unhealthy and the node NotReady). NodeNote is the newest such note, ""
// when none stands (the relists went through again); severe marks one
// that stops every pod. The TUI shows it as a banner under the header,
// re-read with the rest on each change.
type NodeNoter interface {
	NodeNote() (line string, severe bool)
}

// nodeNote is the banner's note (NodeNoter), "" for none.
type nodeNote struct {
	line   string
	severe bool
}

// nodeRows is the most rows the node banner takes from the body.
const nodeRows = 2

// bannerLines is the node banner in w cells: the note wrapped on words,
// at most nodeRows lines (the last cut with "…"), none without a note.
func (m *model) bannerLines(w int) []string {
	if m.node.line == "" {
		return nil
	}
	st := m.st.Warning
	if m.node.severe {
		st = m.st.Failed
	}
	ls := strings.Split(ansi.Wordwrap(line(m.node.line), w, ""), "\n")
	if len(ls) > nodeRows {
		ls = append(ls[:nodeRows-1], strings.Join(ls[nodeRows-1:], " "))
	}
	for i, l := range ls {
		ls[i] = fit(st.Render(l), w)
	}
	return ls
}

// running is the keypress's run under way, if any.
type running struct {
	busy bool
	// op is what runs: "next", "continue" or "retry"; start when the
	// key was pressed; id the step running (0: none); method the CRI call
	// in flight.
	op     string
	start  time.Time
	id     int
	method string
	// wait is the running step's deliberate wait (a back-off), if it
	// announced one, and waitFrom when the TUI heard of it.
	wait     *steps.Wait
	waitFrom time.Time
}

// waitLine says a running step's wait and its countdown: "back-off 10s
// for app, 3.2s left", with how to shorten it while the kubelet's own
// delays are waited in full.
// Short leaves the container and the flag out (the step pane says them).
func (r running) waitLine(now time.Time, short bool) string {
	w := r.wait
	if w == nil {
		return ""
	}
	left := max(0, w.For-now.Sub(r.waitFrom))
	if short {
		// The container is in the step's name.
		return fmt.Sprintf("%s %s, %.1fs left", w.What, w.Delay, left.Seconds())
	}
	s := fmt.Sprintf("%s %s for %s, %.1fs left", w.What, w.Delay, line(w.Container), left.Seconds())
	if w.Scale == 1 {
		return s + " — --backoff-scale 0.1 to shorten"
	}
	return s + fmt.Sprintf(" (--backoff-scale %g)", w.Scale)
}

// liveModel is what moves while the run goes on: the keypress's run under
// way (running), the spinner, and a Live engine's changes (src, nil for
// an engine that only moves when asked).
type liveModel struct {
	*common
	src     Live
	running running
	spin    spinner.Model
}

func newLiveModel(c *common, eng Engine) liveModel {
	l := liveModel{common: c, spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(c.st.Running))}
	l.src, _ = eng.(Live)
	return l
}

// wait delivers the next change of a Live engine (nil for others); the
// root re-arms it.
func (l *liveModel) wait() tea.Cmd {
	if l.src == nil {
		return nil
	}
	ch := l.src.Changed()
	return func() tea.Msg {
		<-ch
		return liveMsg{}
	}
}

// tick moves the spinner while a run is under way, and lets it stop after.
func (l *liveModel) tick(msg spinner.TickMsg) tea.Cmd {
	if !l.running.busy {
		return nil
	}
	var cmd tea.Cmd
	l.spin, cmd = l.spin.Update(msg)
	return cmd
}

// changed re-reads a Live engine, unless a keypress's run is under way
// (its own end re-reads it).
func (m *model) changed() tea.Cmd {
	if !m.live.running.busy {
		m.refresh()
	}
	return m.live.wait()
}

// status is the status line while a keypress's run is under way, in w
// cells: the step, the call in flight, the time since the key, a wait's
// countdown (without its flag when the line is too narrow for it).
func (l *liveModel) status(rv runView, w int) string {
	st, r := l.st, l.running
	what := ""
	if s, ok := rv.stepByID(r.id); ok {
		what = fmt.Sprintf("%d %s", s.ID, s.Name)
	}
	if r.method != "" {
		what += " · " + r.method
	}
	if r.op == "continue" {
		what = "continuing: " + what
		if r.id == 0 {
			what = "continuing:" // between two steps
		}
	}
	out := st.Running.Render(rv.spin) + " " + what + " " + st.Dim.Render(l.fmtDur(l.now().Sub(r.start)))
	esc := st.Dim.Render("  esc cancels")
	for _, short := range []bool{false, true} {
		wl := r.waitLine(l.now(), short)
		if wl == "" {
			break
		}
		line := out + " · " + st.Running.Render(wl) + esc
		if short || lipgloss.Width(line) <= w {
			return line
		}
	}
	return out + esc
}
