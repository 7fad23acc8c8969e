package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// key handles one keypress: ctrl+c always, then the mode's own keys.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQ) {
		m.result.Teardown, m.result.Interrupted = true, true
		if m.tearing && m.live.running.busy {
			// A teardown step is not cut short: the first ctrl+c lets it
			// finish (the rest is torn down after the TUI closes), a
			// second one cancels it.
			if m.ui == uiQuitting {
				m.run.cancelRun()
				return nil
			}
			m.decided, m.ui = true, uiQuitting
			return nil
		}
		return m.quit()
	}
	switch m.ui {
	case uiConfirm:
		return m.confirmKey(k)
	case uiHelp:
		if m.helpS.scroll(k, m.layout().bodyH) {
			return nil
		}
		m.ui = uiBrowse
		if key.Matches(k, m.keys.Quit) {
			return m.askQuit()
		}
		return nil
	case uiGoto:
		m.gotoKey(k)
		return nil
	}
	m.flash = ""
	if !m.live.running.busy && m.pred.key(k) {
		return nil
	}
	if m.replay != nil {
		if cmd, ok := m.replayKey(k); ok {
			return cmd
		}
	}
	return m.browseKey(k)
}

// confirmKey answers the quit prompt.
func (m *model) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.ckeys.Yes):
		return m.beginTeardown(false)
	case key.Matches(k, m.ckeys.All):
		if _, ok := m.eng.(teardowner); !ok {
			return nil // not offered
		}
		return m.beginTeardown(true)
	case key.Matches(k, m.ckeys.No):
		m.result.Teardown = false
		return m.quit()
	case key.Matches(k, m.ckeys.Accept):
		if m.opts.Keep {
			m.result.Teardown = false
			return m.quit()
		}
		return m.beginTeardown(false)
	case key.Matches(k, m.ckeys.Back):
		m.ui = uiBrowse
	}
	return nil
}

// teardowner is an engine whose teardown the TUI can step: a live
// *steps.Engine (PlanTeardown appends the teardown steps to the plan).
type teardowner interface{ PlanTeardown() }

// beginTeardown answers the quit prompt with a teardown: the teardown
// steps join the plan and run one keypress at a time, or all at once
// (all: as c continues). Once they have run, q quits. An engine that
// cannot step its teardown, or a step still running, quits and leaves
// the teardown to the caller (session.Settle), as before.
func (m *model) beginTeardown(all bool) tea.Cmd {
	m.result.Teardown = true
	td, ok := m.eng.(teardowner)
	if !ok || m.live.running.busy {
		return m.quit()
	}
	m.ui, m.tearing = uiBrowse, true
	td.PlanTeardown()
	m.refresh()
	if m.nextID == 0 {
		m.decided = true
		return tea.Quit
	}
	m.selectStep(m.nextID)
	if all {
		return m.start("continue")
	}
	return nil
}

// askQuit is q: the quit prompt; a replay, with nothing to tear down, quits
// at once, and so does a TUI whose teardown has begun (what is left of it
// runs after the TUI closes).
func (m *model) askQuit() tea.Cmd {
	if m.replay != nil {
		m.result.Teardown = false
		return m.quit()
	}
	if m.tearing {
		return m.quit()
	}
	m.ui = uiConfirm
	return nil
}

// browseKey handles the keys of the usual mode (live, and a replay's
// keys that work as live).
func (m *model) browseKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Help):
		if m.ui == uiBrowse {
			m.ui, m.helpS.top = uiHelp, 0
		}
	case key.Matches(k, m.keys.Quit):
		if m.ui == uiBrowse {
			return m.askQuit()
		}
	case key.Matches(k, m.keys.Cancel):
		if m.live.running.busy {
			m.run.cancelRun()
			m.flash = flashCancelling
		} else {
			m.pred.hide() // at the end, predict mode's verdict
		}
	case key.Matches(k, m.keys.Next):
		if why := m.cannotRun(); why != "" {
			m.flash = why
			return nil
		}
		if m.pred.open() {
			m.flash = flashAnswerFirst
			return nil
		}
		return m.start("next")
	case key.Matches(k, m.keys.Continue):
		if m.pred.on {
			m.flash = flashNoContinue
			return nil
		}
		if why := m.cannotRun(); why != "" {
			m.flash = why
			return nil
		}
		return m.start("continue")
	case key.Matches(k, m.keys.Retry):
		if m.tearing {
			m.flash = "tearing down: nothing to retry"
			return nil
		}
		if m.live.running.busy {
			m.flash = flashBusy
			return nil
		}
		if err := m.eng.Retry(); err != nil {
			m.flash = err.Error()
			return nil
		}
		m.refresh()
		m.pred.drop() // a retry runs without a question
		return m.start("retry")
	case key.Matches(k, m.keys.Break):
		m.toggleBreak()
	case key.Matches(k, m.keys.Timeline):
		m.screen, m.tl.top = m.screen.toggle(), -1
	case key.Matches(k, m.keys.Cluster):
		return m.clusterKey()
	case m.screen == screenTimeline && m.tl.scroll(k, m.timeline(), max(1, m.layout().bodyH-3)):
	case key.Matches(k, m.keys.Tab):
		m.pane.mode = (m.pane.mode + 1) % 3
		m.pane.scroll = 0
		m.loadLog()
	case key.Matches(k, m.keys.Up):
		m.moveCursor(-1)
	case key.Matches(k, m.keys.Down):
		m.moveCursor(1)
	case m.clus.shown && m.screen == screenPanes && key.Matches(k, m.keys.PgUp, m.keys.PgDown):
		// The cluster pane scrolls while it is up.
		_, h := m.layout().clusterSplit()
		if key.Matches(k, m.keys.PgUp) {
			m.clus.scroll = max(0, m.clus.scroll-max(1, h-2))
		} else {
			m.clus.scroll += max(1, h-2)
		}
	case m.screen == screenPanes && key.Matches(k, m.keys.PgUp, m.keys.PgDown) &&
		m.pred.scrollKey(key.Matches(k, m.keys.PgDown)):
		// A verdict cut short scrolls (predict mode on a small screen).
	case key.Matches(k, m.keys.PgUp):
		m.pane.scroll -= max(1, m.layout().stepH-2)
		if m.pane.scroll < 0 {
			m.pane.scroll = 0
		}
	case key.Matches(k, m.keys.PgDown):
		m.pane.scroll += max(1, m.layout().stepH-2)
	default:
		m.flash = unknownKey(k)
	}
	return nil
}

// unknownKey is the status line for a key that does nothing here.
func unknownKey(k tea.KeyPressMsg) string {
	return fmt.Sprintf("%s does nothing here: ? for help", safe.Line(k.String()))
}

// cannotRun says why Next/Continue cannot run now, or "".
func (m *model) cannotRun() string {
	switch {
	case m.live.running.busy:
		return flashBusy
	case m.failedStep() != nil:
		s := m.failedStep()
		return fmt.Sprintf("step %d %s failed: r retries it, q quits", s.ID, s.Name)
	case m.nextID == 0 && m.tearing:
		return "torn down: q quits"
	case m.nextID == 0:
		return "all steps done: q quits (and tears the pod down)"
	}
	return ""
}

func (m *model) failedStep() *steps.Step {
	if m.live.running.busy || m.tearing {
		// Teardown runs whether or not creation failed.
		return nil
	}
	// The engine's failed step, not any step shown failed: a failure the
	// kubelet recovers from (a container exit followed by its restart) is
	// shown failed but the run goes on.
	f, failed := m.eng.Failed()
	if !failed {
		return nil
	}
	return &f
}

// quit ends the program, once a running call has been cancelled and returned.
func (m *model) quit() tea.Cmd {
	m.decided, m.ui = true, uiBrowse
	if m.live.running.busy {
		m.ui = uiQuitting
		m.run.cancelRun()
		return nil
	}
	return tea.Quit
}

func (m *model) moveCursor(d int) {
	n := m.plan.cursor + d
	if n < 0 || n >= len(m.plan.rows) {
		return
	}
	m.plan.cursor = n
	m.pane.scroll = 0
	m.loadLog()
}

func (m *model) toggleBreak() {
	r, ok := m.plan.cursorRow()
	if !ok {
		return
	}
	if r.step < 0 {
		m.plan.stageBreak[r.stage] = m.eng.ToggleBreakStage(r.stage)
		return
	}
	id := m.steps[r.step].ID
	m.plan.stepBreak[id] = m.eng.ToggleBreakStep(id)
}

// clusterKey is K: show the cluster's view (read again), or hide it when
// it is up and read; without a cluster it says so.
func (m *model) clusterKey() tea.Cmd {
	if m.clus.src == nil {
		m.flash = "no cluster: K shows the cluster's view of a pod run with --pod NAMESPACE/NAME"
		return nil
	}
	if m.clus.shown && m.screen == screenPanes && !m.clus.loading {
		m.clus.shown = false
		return nil
	}
	m.clus.shown, m.screen, m.clus.scroll = true, screenPanes, 0
	return m.clus.fetch(m.ctx)
}
