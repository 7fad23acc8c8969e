package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

// predictModel is predict mode (run --predict, Options.Predict): before
// each step a question about it (internal/predict builds and grades it),
// answered with 1-4 or a-d, or skipped with s; space runs the step only
// then. After the step, right or wrong with the explanation (and a
// scenario's lesson), and the score. c is off: every step asks first.
type predictModel struct {
	*common
	on bool
	sc *scenario.Scenario
	// q is the question about the step Next runs (nil: none); skipped
	// says s dropped it.
	q       *predict.Question
	skipped bool
	// last is the last graded step's verdict and lastID that step.
	last   *predict.Verdict
	lastID int
	score  predict.Score
	// scroll is the verdict's first row shown (pgdn, pgup); room and
	// total are the verdict's rows in the last frame and its length, so
	// that the keys know whether it is cut.
	scroll, room, total int
}

// Messages of predict mode.
const (
	flashAnswerFirst = "answer first: 1-4 or a-d (s skips the question), then space runs the step"
	flashNoContinue  = "predict mode: c is off, every step asks first (space runs one step, s skips a question)"
)

// ask builds the question about s, the step Next runs (ok false: none;
// status is the pod's STATUS now), unless it is built already. No
// question about teardown, as in --auto.
func (p *predictModel) ask(s steps.Step, ok bool, status string) {
	if !p.on {
		return
	}
	if !ok || s.Stage == steps.StageTeardown {
		p.q = nil
		return
	}
	if p.q != nil && p.q.Step.ID == s.ID && p.q.Step.Name == s.Name {
		return
	}
	p.q, p.skipped = predict.NewQuestion(s, status, p.sc), false
}

// open says a question waits for its answer: the step may not run yet.
func (p *predictModel) open() bool {
	return p.on && p.q != nil && p.q.Picked < 0 && !p.skipped
}

// key answers the question (1-4 or a-d; a digit again before the step
// runs changes the answer) or skips it (s); false for other keys.
func (p *predictModel) key(k tea.KeyPressMsg) bool {
	if !p.on || p.q == nil || p.skipped {
		return false
	}
	s := k.String()
	if len(s) != 1 {
		return false
	}
	n := len(p.q.Choices)
	switch c := s[0]; {
	case c == 's' && p.q.Picked < 0:
		p.skipped = true
	case c >= '1' && int(c-'1') < n:
		p.q.Picked = int(c - '1')
	case c >= 'a' && int(c-'a') < n && p.q.Picked < 0:
		// Letters answer only while the question waits: b and c are
		// the break and continue keys again after.
		p.q.Picked = int(c - 'a')
	default:
		return false
	}
	return true
}

// observe grades the question on its step's StepDone.
func (p *predictModel) observe(ev steps.Event) {
	if !p.on || p.q == nil || ev.Kind != steps.StepDone || ev.Step.ID != p.q.Step.ID {
		return
	}
	q := p.q
	p.q = nil
	if p.skipped {
		p.last, p.lastID = nil, 0
		return
	}
	v := predict.Grade(q, ev, p.sc)
	p.score.Add(v)
	p.last, p.lastID, p.scroll = &v, ev.Step.ID, 0
}

// scrollKey scrolls a verdict the last frame cut short a page down (pgdn)
// or up; false when no verdict is cut (the keys are the step pane's then).
func (p *predictModel) scrollKey(down bool) bool {
	if !p.shows() || p.room <= 0 || p.total <= p.room {
		return false
	}
	step := max(1, p.room-1) // the row under the "more" line comes first
	if !down {
		step = -step
	}
	p.scroll = max(0, min(p.scroll+step, p.total-p.room))
	return true
}

// covers says the verdict at the end (no question left) takes the step
// pane's h rows at width w: under the step, in the h-3 rows it gets
// there, it would not fit.
func (p *predictModel) covers(w, h int) bool {
	return p.on && p.q == nil && p.last != nil && p.need(w) > max(1, h-3)
}

// hide drops the verdict at the end (esc): the step pane is back whole.
func (p *predictModel) hide() {
	if p.q == nil {
		p.last = nil
	}
}

// drop forgets the question (r: a retry runs without one).
func (p *predictModel) drop() { p.q = nil }

// shows says the pane has something to show.
func (p *predictModel) shows() bool { return p.on && (p.q != nil || p.last != nil) }

// title is the pane's title rule with the score.
func (p *predictModel) title(w int) string {
	t := p.st.Title.Render("predict")
	if p.q != nil {
		t += p.st.Dim.Render(fmt.Sprintf(" ─ step %d %s", p.q.Step.ID, line(p.q.Step.Name)))
	}
	if p.score.Asked > 0 {
		t += p.st.Dim.Render(fmt.Sprintf(" ─ %d of %d right", p.score.Right, p.score.Asked))
	}
	if p.scroll > 0 {
		t += p.st.Dim.Render(" ─ ↑ pgup")
	}
	if p.q == nil && p.last != nil {
		t += p.st.Dim.Render(" ─ esc hides")
	}
	return p.st.rule(t, w)
}

// verdictLines is the last step's verdict wrapped to w cells.
func (p *predictModel) verdictLines(w int) []string {
	if p.last == nil {
		return nil
	}
	var out []string
	// The lesson before why and the kubelet function: a short pane cuts
	// those first.
	ls := p.last.Lines()
	if p.last.Lesson != nil && len(ls) >= 4 {
		n := len(ls)
		ls = append(append([]string{ls[0]}, ls[n-3:]...), ls[1:n-3]...)
	}
	for i, l := range ls {
		st := p.st.Dim
		if i == 0 {
			switch {
			case p.last.Right:
				st = p.st.Done
			case p.last.Unknowable:
				st = p.st.Warning
			default:
				st = p.st.Failed
			}
			l = fmt.Sprintf("step %d: %s", p.lastID, l)
		} else if strings.HasPrefix(l, "lesson") || strings.HasPrefix(l, "fix:") {
			st = p.st.Bold
		}
		for _, wl := range wrap(text(l), w) {
			out = append(out, st.Render(wl))
		}
	}
	return out
}

// How much room a question takes: all of it (each choice on a line, the
// keys under them); compact (the keys left to the status line, the choices
// two a line where they fit); tight (compact, the prompt cut to one line).
const (
	qFull = iota
	qCompact
	qTight
)

// questionLines is the question, its choices and what to press, at one of
// the sizes above.
func (p *predictModel) questionLines(w, size int) []string {
	q := p.q
	if q == nil {
		return nil
	}
	out := wrap("? "+q.Prompt, w)
	if size == qTight && len(out) > 1 {
		out = []string{fit("? "+q.Prompt, w)}
	}
	cells := make([]string, len(q.Choices))
	widest := 0
	for i, c := range q.Choices {
		mark := "  "
		if size != qFull {
			mark = " "
		}
		if i == q.Picked {
			mark = "▸" + mark[1:]
		}
		cells[i] = fmt.Sprintf("%s%d/%c) %s", mark, i+1, 'a'+i, line(c))
		widest = max(widest, len([]rune(cells[i])))
	}
	style := func(i int) string {
		if i == q.Picked {
			return p.st.Prompt.Render(cells[i])
		}
		return p.st.Bold.Render(cells[i])
	}
	if size != qFull && 2*widest+2 <= w {
		for i := 0; i < len(cells); i += 2 {
			l := fit(style(i), widest+2)
			if i+1 < len(cells) {
				l += style(i + 1)
			}
			out = append(out, fit(l, w))
		}
	} else {
		for i := range cells {
			out = append(out, fit(style(i), w))
		}
	}
	if size != qFull {
		return out
	}
	switch {
	case p.skipped:
		out = append(out, p.st.Dim.Render(fit("skipped: space runs the step", w)))
	case q.Picked < 0:
		out = append(out, p.st.Dim.Render(fit("1-4 or a-d answers, s skips; then space runs it", w)))
	default:
		out = append(out, p.st.Dim.Render(fit("space runs the step (1-4 changes the answer)", w)))
	}
	return out
}

// view is the pane's content, h lines of w cells: the question at the
// bottom, which keeps its rows (compact, then tight, in a short pane),
// and above it the last verdict (at the end with the score) in the rows
// left, from where pgdn scrolled it; a verdict cut short says how much is
// below and which key shows it.
func (p *predictModel) view(w, h int) []string {
	v := p.verdictLines(w - 1)
	if p.q == nil && p.score.Asked+p.score.Unknowable > 0 {
		v = append(v, p.st.Bold.Render(p.score.String()))
	}
	q := p.questionLines(w-1, qFull)
	if len(q)+len(v) > h {
		q = p.questionLines(w-1, qCompact)
	}
	if len(q) > h {
		q = p.questionLines(w-1, qTight)
	}
	lines, _ := window(append(p.verdictRows(v, max(0, h-len(q))), q...), 0, h)
	for i, l := range lines {
		lines[i] = fit(" "+l, w)
	}
	return lines
}

// verdictRows is room rows of the verdict v from p.scroll (clamped to its
// end); when more is below, the last row says how much and pgdn.
func (p *predictModel) verdictRows(v []string, room int) []string {
	p.room, p.total = room, len(v)
	if len(v) <= room || room == 0 {
		p.scroll = 0
		return v[:min(len(v), room)]
	}
	p.scroll = max(0, min(p.scroll, len(v)-room))
	out := append([]string(nil), v[p.scroll:p.scroll+room]...)
	if below := len(v) - p.scroll - room; below > 0 && room > 1 {
		out[room-1] = p.st.Dim.Render(fmt.Sprintf("↓ %d more: pgdn", below+1))
	}
	return out
}

// need is how many lines the pane wants at width w.
func (p *predictModel) need(w int) int {
	n := len(p.questionLines(w-1, qFull)) + len(p.verdictLines(w-1))
	if p.q == nil {
		n++
	}
	return n
}

// wrap word-wraps plain s to w cells.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}
