package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/steps"
)

// planView renders the plan pane: h lines of w cells.
func (m *model) planView(w, h int) []string {
	done := 0
	for _, s := range m.steps {
		if s.State == steps.Done {
			done++
		}
	}
	out := []string{m.st.rule(m.st.Title.Render("plan")+m.st.Dim.Render(fmt.Sprintf(" %d/%d", done, len(m.steps))), w)}
	h--
	if h <= 0 {
		return out[:max(0, h+1)]
	}
	// Keep the cursor visible, with a row of context when there is room.
	if m.cursor < m.planTop+1 {
		m.planTop = m.cursor - 1
	}
	if m.cursor > m.planTop+h-2 {
		m.planTop = m.cursor - h + 2
	}
	if m.planTop > len(m.rows)-h {
		m.planTop = len(m.rows) - h
	}
	if m.planTop < 0 {
		m.planTop = 0
	}
	for i := m.planTop; i < len(m.rows) && len(out) <= h; i++ {
		out = append(out, m.planRow(i, w))
	}
	for len(out) <= h {
		out = append(out, strings.Repeat(" ", w))
	}
	return out
}

// planRow renders row i: a stage header, or a step with its status mark,
// ID, name, breakpoint and duration.
func (m *model) planRow(i, w int) string {
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
	s := m.steps[r.step]
	if m.breakAt(r.step) {
		bp = "●"
	}
	mark, markStyle := m.mark(s)
	dur := ""
	if s.State == steps.Done || s.State == steps.Failed {
		dur = " " + m.fmtDur(s.Duration)
	} else if s.State == steps.Running {
		dur = " " + m.fmtDur(m.now().Sub(m.runningSince(s)))
	}
	name := fmt.Sprintf("%2d %s", s.ID, s.Name)
	room := w - 4 - lipgloss.Width(dur)
	name = fit(name, room)
	if cur {
		return m.st.Cursor.Render(pre + bp + mark + " " + name + dur)
	}
	nameStyle := lipgloss.NewStyle()
	switch {
	case s.ID == m.nextID && !m.busy:
		nameStyle = m.st.NextStep
	case s.State == steps.Pending || s.State == steps.Skipped:
		nameStyle = m.st.Pending
	case s.State == steps.Failed:
		nameStyle = m.st.Failed
	}
	return pre + m.st.Break.Render(bp) + markStyle.Render(mark) + " " + nameStyle.Render(name) + m.st.Dim.Render(dur)
}

// mark is a step's status mark.
func (m *model) mark(s steps.Step) (string, lipgloss.Style) {
	switch s.State {
	case steps.Running:
		return ansiStrip(m.spin.View()), m.st.Running
	case steps.Done:
		return "✓", m.st.Done
	case steps.Failed:
		return "✗", m.st.Failed
	case steps.Skipped:
		return "-", m.st.Skipped
	}
	if s.ID == m.nextID && !m.busy {
		return "▸", m.st.NextStep
	}
	return "·", m.st.Pending
}
