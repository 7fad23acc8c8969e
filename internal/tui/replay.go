package tui

import (
	"fmt"
	"strconv"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/steps"
)

// Replayer is an Engine over a recording (internal/replay's Player): its
// position is how many of the recorded steps have run, and it can move
// anywhere, back as well as forward. The TUI detects it and offers the
// replay keys; a live engine need not implement it.
type Replayer interface {
	Engine
	// Len is the number of steps the recording ran; Position how many
	// have run now; Seek moves to the state after the first pos ran.
	Len() int
	Position() int
	Seek(pos int)
	// RunID is the ID of the step that ran at position pos (0 if none);
	// Find the position right after step id first ran.
	RunID(pos int) int
	Find(id int) (int, bool)
	// ContinueBack moves back to the previous breakpoint, or the start.
	ContinueBack()
	// Loaded is closed once the whole recording is read (Len is final).
	Loaded() <-chan struct{}
	// Damage says why the recording ends before its summary (nil: whole).
	Damage() error
}

// replayModel is what only a replay has: the engine as a Replayer, the
// header and status line it shows, and g's prompt. The root model has one
// only in a replay (nil when live).
type replayModel struct {
	*common
	rp   Replayer
	info *ReplayInfo
	// gotoBuf is the step number typed at g's prompt (uiGoto).
	gotoBuf string
}

// waitLoaded delivers replayLoadedMsg once the recording is read.
func (m *model) waitLoaded() tea.Cmd {
	if m.replay == nil {
		return nil
	}
	ch := m.replay.rp.Loaded()
	return func() tea.Msg {
		<-ch
		return replayLoadedMsg{}
	}
}

// ReplayInfo says, in the header, what is replayed.
type ReplayInfo struct {
	// File is the recording; Recorded when, Host where and with which podstep.
	File     string
	Recorded time.Time
	Host     string
	Podstep  string
	// Runtime names the runtime recorded ("containerd v1.6.24"); Simulated
	// says it was podstep's own.
	Runtime   string
	Simulated bool
}

// helpKeys is the help bubble's KeyMap: the replay's in a replay.
func (m *model) helpKeys() help.KeyMap { return m.barKeys() }

// barKeys is the help bar's keys: the replay's in a replay.
func (m *model) barKeys() barKeys {
	if m.replay != nil {
		return replayHelp{m.keys, m.rkeys}
	}
	if m.clus.src != nil {
		return clusterHelp{m.keys}
	}
	if m.pred.on && m.pred.q != nil {
		// A question about the next step: its keys first.
		return predictHelp{m.keys}
	}
	return m.keys
}

// replayKey handles the keys that differ in a replay; false for the others
// (cursor, breakpoints, view, help), which work as live.
func (m *model) replayKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	rp := m.replay.rp
	switch {
	case key.Matches(k, m.keys.Quit):
		return m.askQuit(), true
	case key.Matches(k, m.keys.Next), key.Matches(k, m.rkeys.Forward):
		if rp.Position() >= rp.Len() {
			m.flash = "end of the recording: p goes back, q quits"
		} else {
			rp.Seek(rp.Position() + 1)
			m.moved()
		}
	case key.Matches(k, m.rkeys.Back):
		if rp.Position() == 0 {
			m.flash = "at the start of the recording: space goes forward"
		} else {
			rp.Seek(rp.Position() - 1)
			m.moved()
		}
	case key.Matches(k, m.keys.Continue):
		if rp.Position() >= rp.Len() {
			m.flash = "end of the recording: C goes back to a breakpoint, q quits"
		} else {
			if err := rp.Continue(m.ctx); err != nil {
				m.flash = err.Error() // only a cancelled context: the recording is in memory
			}
			m.moved()
		}
	case key.Matches(k, m.rkeys.ContBack):
		if rp.Position() == 0 {
			m.flash = "at the start of the recording: c goes forward to a breakpoint"
		} else {
			rp.ContinueBack()
			m.moved()
		}
	case key.Matches(k, m.rkeys.Goto):
		m.ui, m.replay.gotoBuf = uiGoto, ""
	case key.Matches(k, m.keys.Retry):
		m.flash = rp.Retry().Error()
	case key.Matches(k, m.keys.Cancel):
	default:
		return nil, false
	}
	return nil, true
}

// gotoKey is a key at g's prompt: the prompt's own edit, then, on enter,
// the move.
func (m *model) gotoKey(k tea.KeyPressMsg) {
	done, jump := m.replay.editGoto(k)
	if done {
		m.ui = uiBrowse
	}
	if !jump {
		return
	}
	if flash, moved := m.replay.seekStep(m.replay.gotoBuf); moved {
		m.moved()
	} else if flash != "" {
		m.flash = flash
	}
}

// editGoto edits the step number of g's prompt: done when the prompt
// closes, jump when it closes to go there.
func (r *replayModel) editGoto(k tea.KeyPressMsg) (done, jump bool) {
	switch s := k.String(); {
	case key.Matches(k, r.rkeys.GotoCancel):
		return true, false
	case key.Matches(k, r.rkeys.GotoDelete):
		if n := len(r.gotoBuf); n > 0 {
			r.gotoBuf = r.gotoBuf[:n-1]
		}
	case key.Matches(k, r.rkeys.GotoGo):
		return true, true
	case len(s) == 1 && s[0] >= '0' && s[0] <= '9' && len(r.gotoBuf) < 7:
		r.gotoBuf += s
	}
	return false, false
}

// seekStep moves to right after step id ran (0: the start); moved false
// with a message when it never ran, without one when id is no number.
func (r *replayModel) seekStep(id string) (flash string, moved bool) {
	n, err := strconv.Atoi(id)
	switch {
	case err != nil:
		return "", false
	case n == 0:
		r.rp.Seek(0)
	default:
		pos, ok := r.rp.Find(n)
		if !ok {
			return fmt.Sprintf("step %d never ran in this recording", n), false
		}
		r.rp.Seek(pos)
	}
	return "", true
}

// moved shows the state at the replay's new position: the screen after
// step N ran is the same whether reached forward or back.
func (m *model) moved() {
	pos := m.replay.rp.Position()
	m.refresh()
	m.lastID = m.replay.rp.RunID(pos)
	m.last = lastChange{}
	if s, ok := m.stepByID(m.lastID); ok && pos > 0 {
		m.last = newLastChange(s, len(m.pod.Events))
	}
	if m.lastID > 0 {
		m.selectStep(m.lastID)
	} else {
		m.selectStep(m.nextID)
	}
	m.pane.scroll = 0
	m.loadLog()
}

// header is the header line of a replay: what, when, where, on which runtime.
func (m *replayModel) header(w int) string {
	p := m.rp.Pod()
	left := m.st.Header.Render("podstep") + " " + m.st.Sim.Render("REPLAY") + " pod " + m.st.Bold.Render(line(p.Namespace+"/"+p.Name))
	ri := m.info
	if ri == nil {
		return fit(left, w)
	}
	when := ri.Recorded.UTC().Format("2006-01-02 15:04 UTC")
	rt, short := line(ri.Runtime), line(ri.Runtime)
	host := line(ri.Host)
	if ri.Simulated {
		rt = m.st.Sim.Render("SIMULATED") + " " + rt
		short = m.st.Sim.Render("SIMULATED")
	}
	// Narrow windows drop words before the runtime (a simulated one above all).
	for _, l := range []string{
		left + m.st.Dim.Render(" · recorded "+when+" on "+host+" · ") + rt,
		left + m.st.Dim.Render(" · "+when+" on "+host+" · ") + rt,
		left + m.st.Dim.Render(" · "+when+" on "+host+" · ") + short,
	} {
		if lipgloss.Width(l) <= w {
			return l
		}
	}
	return fit(left+" "+short+m.st.Dim.Render(" · "+when+" on "+host), w)
}

// replayStatus is the status line of a replay: the g prompt, or where
// the replay is and what comes next.
func (m *model) replayStatus() string {
	if m.ui == uiGoto {
		return m.replay.gotoPrompt()
	}
	next, ok := m.stepByID(m.nextID)
	return m.replay.status(m.flash, next, ok, m.pod.Display)
}

// gotoPrompt is the status line while g's prompt is open.
func (m *replayModel) gotoPrompt() string {
	return m.st.Prompt.Render("go to step: "+m.gotoBuf+"▏") + m.st.Dim.Render("  (enter goes there, 0: the start, esc: back)")
}

// status says where the replay is and what comes next: a message (flash)
// first, then the end of a damaged recording, a failed step, the next
// step (hasNext), or the end and the pod's display status.
func (m *replayModel) status(flash string, next steps.Step, hasNext bool, display string) string {
	st := m.st
	total := fmt.Sprint(m.rp.Len())
	select {
	case <-m.rp.Loaded():
	default:
		total += "+" // still reading the recording
	}
	at := st.Sim.Render(fmt.Sprintf("REPLAY %d/%s", m.rp.Position(), total)) + " "
	if flash != "" {
		return at + st.Warning.Render(line(flash))
	}
	if err := m.rp.Damage(); err != nil && m.rp.Position() == m.rp.Len() {
		return at + st.Failed.Render("the recording ends here: "+line(err.Error()))
	}
	if f, ok := m.rp.Failed(); ok {
		return at + st.Failed.Render(fmt.Sprintf("✗ step %d %s failed: %s", f.ID, line(f.Name), line(f.Result.Reason))) + st.Dim.Render(" · space goes on, p back")
	}
	if hasNext {
		return at + st.NextStep.Render("▸ next: ") + fmt.Sprintf("%d %s", next.ID, next.Title) + st.Dim.Render(" · space, p back")
	}
	return at + st.Done.Render("✓ end of the recording: pod "+line(display)) + st.Dim.Render(" · p back, q quits")
}
