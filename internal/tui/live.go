package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

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

// waitLive delivers the next change of a Live engine (nil for others);
// Update re-arms it.
func (m *model) waitLive() tea.Cmd {
	l, ok := m.eng.(Live)
	if !ok {
		return nil
	}
	ch := l.Changed()
	return func() tea.Msg {
		<-ch
		return liveMsg{}
	}
}

// live re-reads a Live engine, unless a keypress's run is under way (its
// own end re-reads it).
func (m *model) live() tea.Cmd {
	if !m.running.busy {
		m.refresh()
	}
	return m.waitLive()
}

// runningSince is when a running step began: when the keypress ran it, or,
// for a step a Live engine runs by itself, its own start.
func (m *model) runningSince(s steps.Step) time.Time {
	if !m.running.busy && !s.Started.IsZero() {
		return s.Started
	}
	return m.running.start
}
