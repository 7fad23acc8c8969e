package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/steps"
)

// row is one line of the plan pane: a stage header or a step.
type row struct {
	stage steps.Stage
	step  int // index into model.steps; -1 for a stage header
}

// planModel is the plan pane's own state: its rows (stage headers and
// steps), the cursor, the first row shown, and the breakpoints as the
// engine confirmed them.
type planModel struct {
	*common
	rows   []row
	cursor int // index into rows
	top    int
	// stageBreak and stepBreak are the breakpoints set (a stage's stops
	// before its first step).
	stageBreak map[steps.Stage]bool
	stepBreak  map[int]bool
}

// buildRows lists the plan's rows: each stage's header, then its steps.
func (m *planModel) buildRows(all []steps.Step) {
	m.rows = m.rows[:0]
	var stage steps.Stage
	for i, s := range all {
		if i == 0 || s.Stage != stage {
			stage = s.Stage
			m.rows = append(m.rows, row{stage: stage, step: -1})
		}
		m.rows = append(m.rows, row{stage: stage, step: i})
	}
	if m.cursor >= len(m.rows) {
		m.cursor = len(m.rows) - 1
	}
}

// cursorRow is the row under the cursor.
func (m *planModel) cursorRow() (row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return row{}, false
	}
	return m.rows[m.cursor], true
}

// view renders the plan pane: h lines of w cells.
func (m *planModel) view(rv runView, w, h int) []string {
	// The steps ended, as the live page counts them (steps.Ended). A
	// replay's one counter is its position, on the status line.
	count := m.st.Dim.Render(fmt.Sprintf(" %d/%d", steps.Ended(rv.steps), len(rv.steps)))
	if rv.replay {
		count = ""
	}
	out := []string{m.st.rule(m.st.Title.Render("plan")+count, w)}
	h--
	if h <= 0 {
		return out[:max(0, h+1)]
	}
	m.follow(h)
	for i := m.top; i < len(m.rows) && len(out) <= h; i++ {
		out = append(out, m.row(rv, i, w))
	}
	for len(out) <= h {
		out = append(out, strings.Repeat(" ", w))
	}
	return out
}

// follow moves the first row shown so that the cursor is among the h
// rows shown, with a row of context when there is room.
func (m *planModel) follow(h int) {
	if m.cursor < m.top+1 {
		m.top = m.cursor - 1
	}
	if m.cursor > m.top+h-2 {
		m.top = m.cursor - h + 2
	}
	if m.top > len(m.rows)-h {
		m.top = len(m.rows) - h
	}
	if m.top < 0 {
		m.top = 0
	}
}

// row renders row i: a stage header, or a step with its status mark,
// ID, name, breakpoint and duration.
func (m *planModel) row(rv runView, i, w int) string {
	r := m.rows[i]
	cur := i == m.cursor
	// The cursor is reverse video, and a › for terminals without attributes.
	pre := " "
	if cur {
		pre = "›"
	}
	bp := " "
	if r.step < 0 {
		if m.stageBreak[r.stage] {
			bp = "●"
		}
		if cur {
			return m.st.Cursor.Render(fit(pre+bp+string(r.stage), w))
		}
		return fit(pre+m.st.Break.Render(bp)+m.st.Stage.Render(string(r.stage)), w)
	}
	s := rv.steps[r.step]
	if m.breakAt(rv.steps, r.step) {
		bp = "●"
	}
	mark, markStyle := m.mark(rv, s)
	dur := ""
	switch s.State {
	case steps.Done, steps.Failed:
		dur = " " + m.fmtDur(s.Duration)
	case steps.Running:
		dur = " " + m.fmtDur(m.now().Sub(rv.since(s)))
	}
	name := fmt.Sprintf("%2d %s", s.ID, s.Name)
	room := w - 4 - lipgloss.Width(dur)
	name = fit(name, room)
	if cur {
		return m.st.Cursor.Render(pre + bp + mark + " " + name + dur)
	}
	nameStyle := lipgloss.NewStyle()
	switch {
	case s.ID == rv.nextID && !rv.running.busy:
		nameStyle = m.st.NextStep
	case s.State == steps.Pending || s.State == steps.Skipped:
		nameStyle = m.st.Pending
	case s.State == steps.Failed:
		nameStyle = m.st.Failed
	}
	return pre + m.st.Break.Render(bp) + markStyle.Render(mark) + " " + nameStyle.Render(name) + m.st.Dim.Render(dur)
}

// mark is a step's status mark (the plan's and the step pane's).
func (c *common) mark(rv runView, s steps.Step) (string, lipgloss.Style) {
	switch s.State {
	case steps.Running:
		return ansiStrip(rv.spin), c.st.Running
	case steps.Done:
		return "✓", c.st.Done
	case steps.Failed:
		return "✗", c.st.Failed
	case steps.Skipped:
		return "-", c.st.Skipped
	}
	if s.ID == rv.nextID && !rv.running.busy {
		return "▸", c.st.NextStep
	}
	return "·", c.st.Pending
}

// breakAt reports whether a breakpoint stops before the step at index i.
func (m *planModel) breakAt(all []steps.Step, i int) bool {
	s := all[i]
	if m.stepBreak[s.ID] {
		return true
	}
	return m.stageBreak[s.Stage] && (i == 0 || all[i-1].Stage != s.Stage)
}
