package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// layout is where the panes go for the current window size.
type layout struct {
	w, planW, rightW     int
	bodyH                int
	stepH, podH, eventsH int
}

// Minimum window the layout is designed for; smaller windows are clipped.
const minW, minH = 60, 16

func (m *model) layoutFor(podNeed int) layout {
	w, h := max(m.width, minW), max(m.height, minH)
	l := layout{w: w, bodyH: h - 3 - len(m.bannerLines(w))}
	l.planW = min(max(w*3/8, 26), 44)
	l.rightW = w - l.planW - 1
	l.podH = min(podNeed, max(3, l.bodyH*3/10))
	l.eventsH = max(2, l.bodyH/5)
	l.stepH = l.bodyH - 3 - l.podH - l.eventsH
	// A small window (80x24): the step pane gets at least 5/8 of the body
	// (up to stepMin rows), so that a create step's CRI request starts on
	// screen; the rows come from the events (down to 2), then the pod
	// (down to its kubectl line and "… N more").
	want := min(l.bodyH*5/8, stepMin)
	if d := min(want-l.stepH, l.eventsH-2); d > 0 {
		l.eventsH -= d
		l.stepH += d
	}
	if d := min(want-l.stepH, l.podH-3); d > 0 {
		l.podH -= d
		l.stepH += d
	}
	return l
}

// stepMin is the step pane's rows the layout takes from the pod and the
// events panes when it has fewer: a create step's summary, details and
// ImageStatus call, then CreateContainer and the first line of its config.
const stepMin = 14

// clusterSplit is the step pane's and the cluster pane's heights when the
// cluster's view is up: the cluster gets the pod's and events' rows, and
// at least half.
func (l layout) clusterSplit() (stepH, clusH int) {
	clusH = max(l.podH+1+l.eventsH, (l.bodyH-2)/2)
	return l.bodyH - 2 - clusH, clusH
}

// layout computes the layout for the pod as it is now.
func (m *model) layout() layout {
	l := m.layoutFor(99)
	return m.layoutFor(len(m.podP.lines(m.view(), l.rightW-1)))
}

// View renders the whole screen.
func (m *model) View() tea.View {
	// Untrusted text went through safe.Text before it was styled; the frame
	// goes through safe.Terminal as the net under that: only the styles'
	// SGR sequences reach the terminal.
	v := tea.NewView(safe.Terminal(m.render()))
	v.AltScreen = true
	v.WindowTitle = "podstep: " + safe.Line(m.eng.Pod().Namespace+"/"+m.eng.Pod().Name)
	return v
}

// render is the screen as a string: header, the node banner (NodeNoter,
// none without a note), body, status line, help bar.
// The body is the help screen, the timeline, or the panes side by side,
// each drawn by its sub-model into the box the layout gives it.
func (m *model) render() string {
	rv := m.view()
	l := m.layoutFor(99)
	pod := m.podP.lines(rv, l.rightW-1)
	l = m.layoutFor(len(pod))

	lines := make([]string, 0, l.bodyH+3+nodeRows)
	lines = append(lines, m.headerView(l.w))
	lines = append(lines, m.bannerLines(l.w)...)
	if m.ui == uiHelp {
		lines = append(lines, m.helpS.view(m.helpKeys(), m.replay != nil, l.w, l.bodyH)...)
	} else if m.screen == screenTimeline {
		lines = append(lines, m.tl.view(m.timeline(), l.w, l.bodyH)...)
	} else {
		plan := m.plan.view(rv, l.planW, l.bodyH)
		right := make([]string, 0, l.bodyH)
		if m.clus.shown {
			// The cluster's view in place of the pod and events panes,
			// under podstep's step: the two reasons on one screen.
			stepH, clusH := l.clusterSplit()
			right = append(right, m.pane.title(rv, l.rightW))
			right = append(right, m.pane.view(rv, l.rightW, stepH)...)
			right = append(right, m.clus.title(l.rightW))
			right = append(right, m.clus.view(rv, l.rightW, clusH)...)
		} else {
			right = append(right, m.stepAndPredict(rv, l)...)
			right = append(right, m.st.rule(m.st.Title.Render("pod"), l.rightW))
			right = append(right, m.podP.view(pod, l.rightW, l.podH)...)
			right = append(right, m.evs.title(m.pane.mode, l.rightW))
			right = append(right, m.evs.view(rv, m.pane.mode, l.rightW, l.eventsH)...)
		}
		sep := m.st.Rule.Render("│")
		for i := 0; i < l.bodyH; i++ {
			lines = append(lines, fit(plan[i], l.planW)+sep+right[i])
		}
	}
	lines = append(lines, fit(m.statusView(l.w), l.w))
	lines = append(lines, footer(m.help, m.barKeys(), l.w))
	return strings.Join(lines, "\n")
}

// stepAndPredict is the step pane's rows (its title and l.stepH lines),
// shared with predict mode's pane: an open question takes them all (the
// step's requests would give its answer away), and so does the verdict at
// the end when it does not fit under the step (until esc hides it: pgdn
// scrolls one pane at a time); else a verdict takes up to half under the
// step.
func (m *model) stepAndPredict(rv runView, l layout) []string {
	if !m.pred.shows() {
		return append([]string{m.pane.title(rv, l.rightW)}, m.pane.view(rv, l.rightW, l.stepH)...)
	}
	// The pane's view before its title: the title says whether the view
	// is scrolled.
	if m.pred.open() || m.pred.covers(l.rightW, l.stepH) {
		v := m.pred.view(l.rightW, l.stepH)
		return append([]string{m.pred.title(l.rightW)}, v...)
	}
	// Between steps the verdict gets half the rows; at the end (no
	// question) all but a few of the step's.
	room := l.stepH / 2
	if m.pred.q == nil {
		room = l.stepH - 3
	}
	n := min(m.pred.need(l.rightW), max(1, room))
	out := append([]string{m.pane.title(rv, l.rightW)}, m.pane.view(rv, l.rightW, l.stepH-n-1)...)
	v := m.pred.view(l.rightW, n)
	out = append(out, m.pred.title(l.rightW))
	return append(out, v...)
}

// headerView names the pod and the runtime; a simulated runtime is said loudly.
func (m *model) headerView(w int) string {
	if m.replay != nil {
		return m.replay.header(w)
	}
	p := m.eng.Pod()
	left := m.st.Header.Render("podstep") + " pod " + m.st.Bold.Render(line(p.Namespace+"/"+p.Name))
	if sc := m.opts.Scenario; sc != nil {
		left += " scenario " + m.st.Bold.Render(line(sc.Name))
	}
	rt := "runtime " + line(m.opts.Runtime.Endpoint)
	if m.opts.Runtime.Simulated {
		rt = m.st.Sim.Render("SIMULATED runtime") + m.st.Dim.Render(" (no containers really run) "+line(m.opts.Runtime.Endpoint))
		if lipgloss.Width(left+"  "+rt) > w {
			rt = m.st.Sim.Render("SIMULATED runtime") + m.st.Dim.Render(" "+line(m.opts.Runtime.Endpoint))
		}
	}
	return fit(left+"  "+rt, w)
}

// statusView is the line above the help bar: the quit prompt, the running
// call, a message, or what comes next.
func (m *model) statusView(w int) string {
	st := m.st
	if m.replay != nil {
		return m.replayStatus()
	}
	switch {
	case m.ui == uiConfirm:
		q := "tear down now? step through it (enter/y) or all at once (c)"
		if m.opts.Keep {
			q = "tear down now? step through it (y) or all at once (c); enter keeps it"
		}
		if _, ok := m.eng.(teardowner); !ok {
			// An engine the TUI cannot step the teardown of (podstep proxy's).
			q = "tear the pod down? [Y/n]"
			if m.opts.Keep {
				q = "tear the pod down? [y/N]"
			}
		}
		cleanup := "podstep cleanup"
		if m.opts.Runtime.Simulated {
			cleanup = "podstep cleanup --sim"
		}
		return st.Prompt.Render(q) + st.Dim.Render("  (n keeps it for `"+cleanup+"`; esc: back)")
	case m.ui == uiQuitting && m.tearing:
		return st.Running.Render(m.live.spin.View()) + " finishing this teardown step, then quitting (ctrl+c again cuts it short)…"
	case m.ui == uiQuitting:
		return st.Running.Render(m.live.spin.View()) + " cancelling the running call, then quitting…"
	case m.live.running.busy:
		return m.live.status(m.view(), w)
	case m.flash != "":
		return st.Warning.Render(line(m.flash))
	}
	if f := m.failedStep(); f != nil {
		score := ""
		if sc := m.pred.score.String(); sc != "" {
			score = " · " + sc
		}
		lesson := ""
		if sc := m.opts.Scenario; sc != nil && !m.pred.on {
			lesson = " · the lesson: podstep scenarios show " + line(sc.Name)
		}
		return st.Failed.Render(fmt.Sprintf("✗ step %d %s failed: %s", f.ID, line(f.Name), line(f.Result.Reason))) + st.Dim.Render(" · r retries, q quits"+score+lesson)
	}
	page := ""
	if m.opts.ServeURL != "" {
		page = " · live page " + line(m.opts.ServeURL)
	}
	if s, ok := m.stepByID(m.nextID); ok {
		if m.pred.open() {
			return st.Prompt.Render("? step "+fmt.Sprint(s.ID)+" "+s.Name+": ") + st.Dim.Render("answer 1-4 or a-d (s skips), then space runs it")
		}
		if m.pred.on {
			return st.NextStep.Render("▸ next: ") + fmt.Sprintf("%d %s", s.ID, s.Title) + st.Dim.Render(" · space runs it"+page)
		}
		return st.NextStep.Render("▸ next: ") + fmt.Sprintf("%d %s", s.ID, s.Title) + st.Dim.Render(" · space runs it, c continues"+page)
	}
	if m.tearing {
		for _, s := range m.steps {
			if s.Stage == steps.StageTeardown && s.State == steps.Failed {
				return st.Failed.Render(fmt.Sprintf("✗ teardown step %d %s failed: %s", s.ID, line(s.Name), line(s.Result.Reason))) +
					st.Dim.Render(" · q quits; the exit says what is left")
			}
		}
		return st.Done.Render("✓ torn down") + st.Dim.Render(" · q quits"+page)
	}
	if sc := m.pred.score.String(); sc != "" {
		return st.Done.Render("✓ all steps done: pod "+line(m.pod.Display)) + st.Dim.Render(" · "+sc+" · q quits"+page)
	}
	return st.Done.Render("✓ all steps done: pod "+line(m.pod.Display)) + st.Dim.Render(" · q quits"+page)
}

func (m *model) stepByID(id int) (s steps.Step, ok bool) {
	if id < 1 || id > len(m.steps) {
		return s, false
	}
	return m.steps[id-1], true
}
