package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/steps"
)

// The timeline view (key t): a waterfall of the steps so far on one time
// axis, one bar per step and one per CRI call under it, like the
// timeline page of `replay --html` (internal/timeline) in the terminal. A
// step's bar shows where its time went, with the split the run's summary
// makes (cmd/podstep timing, timeline's page): the runtime's (its CRI
// calls), deliberate waiting (the time outside calls of a step whose
// Kind.Waits(): back-off, init wait, startup, relist, ready) and podstep's
// own (the rest). Each part has its own character, so the split reads
// without colour too.
const (
	cellRuntime = '█'
	cellOwn     = '▒'
	cellWait    = '░'
)

// tlRow is one line of the waterfall.
type tlRow struct {
	label string
	call  bool
	start time.Time
	dur   time.Duration
	// For a step: its kind (to tell waiting from podstep's own time), its
	// calls' spans, and whether it is still running.
	waits   bool
	calls   [][2]time.Time
	running bool
	failed  bool
	// idle: the folded time between two steps that no step ran in (dur).
	idle bool
}

// tlSplit is the time of the steps so far, split.
type tlSplit struct {
	runtime, own, wait, wall time.Duration
	// idle is the time folded out between steps (fold).
	idle time.Duration
}

// foldMin is the shortest gap between two steps the timeline folds when it
// folds idle time: a person reading between keypresses. Steps that c runs
// follow each other within microseconds.
const foldMin = 200 * time.Millisecond

// timelineModel is the timeline screen: its scroll position, its rows and
// their rendering. It reads the run through timelineRun.
type timelineModel struct {
	*common
	// top is the first row shown, -1 to follow the newest.
	top int
}

// timelineRun is what the timeline reads of the run: the steps, the one
// running (0: none) and whether a keypress's run is under way; fold
// folds the time between steps (a live run driven by keypresses: not a
// replay's, nor a Live engine's, whose gaps are the kubelet's).
type timelineRun struct {
	steps     []steps.Step
	runningID int
	busy      bool
	fold      bool
}

// timeline is the run as the timeline reads it.
func (m *model) timeline() timelineRun {
	return timelineRun{steps: m.steps, runningID: m.live.running.id, busy: m.live.running.busy,
		fold: m.replay == nil && m.live.src == nil}
}

// rows lists the steps that ran or are running, in the order they
// began, each followed by its calls; and the span they cover from t0.
// When run.fold, a gap of foldMin or more between steps (idle time between
// keypresses) is cut out of the axis and listed as an idle row.
func (m *timelineModel) rows(run timelineRun) (rows []tlRow, t0 time.Time, span time.Duration, split tlSplit) {
	var ran []steps.Step
	for _, s := range run.steps {
		if !s.Started.IsZero() && (s.State != steps.Pending && s.State != steps.Skipped || s.ID == run.runningID) {
			ran = append(ran, s)
		}
	}
	sort.SliceStable(ran, func(i, j int) bool { return ran[i].Started.Before(ran[j].Started) })
	if len(ran) == 0 {
		return nil, time.Time{}, 0, split
	}
	t0 = ran[0].Started
	end := t0
	var shift time.Duration // idle time folded so far
	for _, s := range ran {
		if gap := s.Started.Sub(end); run.fold && gap >= foldMin {
			rows = append(rows, tlRow{label: "idle (folded)", idle: true, start: end.Add(-shift), dur: gap})
			shift += gap
			split.idle += gap
		}
		r := tlRow{label: fmt.Sprintf("%d %s", s.ID, s.Name), start: s.Started.Add(-shift), dur: s.Duration,
			waits: s.Kind.Waits(), failed: s.State == steps.Failed}
		if s.ID == run.runningID && run.busy {
			r.running = true
			r.dur = max(0, m.now().Sub(s.Started))
		}
		var inCalls time.Duration
		var calls []tlRow
		for _, c := range s.Calls {
			cs := c.Start.Add(-shift)
			r.calls = append(r.calls, [2]time.Time{cs, cs.Add(c.Duration)})
			calls = append(calls, tlRow{label: c.Method, call: true, start: cs, dur: c.Duration})
			inCalls += c.Duration
			if e := c.Start.Add(c.Duration); e.After(end) {
				end = e
			}
		}
		if e := s.Started.Add(r.dur); e.After(end) {
			end = e
		}
		rt, wait, own := s.Kind.Split(r.dur, inCalls)
		split.runtime, split.wait, split.own = split.runtime+rt, split.wait+wait, split.own+own
		rows = append(rows, r)
		rows = append(rows, calls...)
	}
	split.wall = end.Sub(t0) - shift
	return rows, t0, split.wall, split
}

// timelineView is the body of the screen in timeline mode: a title with
// the legend, the time axis, the rows (the newest in view unless scrolled)
// and the split of the time so far; h lines of w cells.
func (m *timelineModel) view(run timelineRun, w, h int) []string {
	st := m.st
	legend := st.TLRuntime.Render(string(cellRuntime)) + " runtime (CRI)  " + st.TLOwn.Render(string(cellOwn)) + " podstep  " +
		st.TLWait.Render(string(cellWait)) + " waiting"
	out := []string{st.rule(st.Title.Render("timeline")+"  "+legend+st.Dim.Render("  t: back"), w)}
	rows, t0, span, split := m.rows(run)
	if len(rows) == 0 {
		out = append(out, "", "  "+st.Dim.Render("no step has run yet: space runs the next one, c continues"))
		res, _ := window(out, 0, h)
		for i := range res {
			res[i] = fit(res[i], w)
		}
		return res
	}
	labelW := min(max(w/4, 14), 30)
	durW := 8
	barW := max(10, w-labelW-durW-4)
	if span <= 0 {
		span = time.Microsecond
	}
	col := func(t time.Time) int {
		c := int(float64(t.Sub(t0)) / float64(span) * float64(barW))
		return min(max(c, 0), barW-1)
	}
	cols := func(start time.Time, d time.Duration) (int, int) {
		a := col(start)
		b := col(start.Add(d))
		if d > 0 && start.Add(d).Sub(t0) >= span {
			b = barW - 1
		}
		return a, max(a, b)
	}

	out = append(out, fit(strings.Repeat(" ", labelW+1)+axis(span, barW), w))
	body := make([]string, 0, len(rows))
	for _, r := range rows {
		cells := make([]rune, barW)
		for i := range cells {
			cells[i] = ' '
		}
		a, b := cols(r.start, r.dur)
		var bar string
		if r.idle {
			// Folded: no width on the axis, a mark where it was cut.
			cells[a] = '┊'
			label := st.Dim.Render(fit("  "+r.label, labelW))
			body = append(body, fit(label+" "+st.Dim.Render(string(cells))+" "+st.Dim.Render(fmt.Sprintf("%*s", durW, m.fmtDur(r.dur))), w))
			continue
		}
		if r.call {
			bar = st.Dim.Render(string(cells[:a])) + st.TLRuntime.Render(strings.Repeat(string(cellRuntime), b-a+1)) + string(cells[b+1:])
		} else {
			fill := cellOwn
			if r.waits {
				fill = cellWait
			}
			for i := a; i <= b; i++ {
				cells[i] = fill
			}
			for _, c := range r.calls {
				ca, cb := cols(c[0], c[1].Sub(c[0]))
				for i := ca; i <= cb; i++ {
					cells[i] = cellRuntime
				}
			}
			bar = m.styleCells(cells)
		}
		label := "  " + r.label
		if !r.call {
			label = r.label
		}
		label = fit(label, labelW)
		switch {
		case r.call:
			label = st.Dim.Render(label)
		case r.failed:
			label = st.Failed.Render(label)
		case r.running:
			label = st.Running.Render(label)
		}
		d := m.fmtDur(r.dur)
		if r.running {
			d += "…"
		}
		body = append(body, fit(label+" "+bar+" "+fmt.Sprintf("%*s", durW, d), w))
	}
	avail := max(1, h-len(out)-1)
	top := m.top
	if top < 0 || top > len(body)-avail {
		top = len(body) - avail // follow the newest
	}
	win, top := window(body, top, avail)
	if m.top >= 0 {
		m.top = top
	}
	out = append(out, win...)
	sum := fmt.Sprintf("so far %s: runtime %s · podstep %s · waiting %s", m.fmtDur(split.wall), m.fmtDur(split.runtime),
		m.fmtDur(split.own), m.fmtDur(split.wait))
	if split.idle > 0 {
		sum += st.Dim.Render(fmt.Sprintf(" · %s idle between keys, folded", m.fmtDur(split.idle)))
	}
	if len(body) > avail {
		sum += st.Dim.Render(fmt.Sprintf("  rows %d-%d/%d ↑↓", top+1, top+avail, len(body)))
	}
	out = append(out, sum)
	for i := range out {
		out[i] = fit(out[i], w)
	}
	return out
}

// styleCells colours a step's bar by run of equal cells.
func (m *timelineModel) styleCells(cells []rune) string {
	var b strings.Builder
	for i := 0; i < len(cells); {
		j := i
		for j < len(cells) && cells[j] == cells[i] {
			j++
		}
		run := string(cells[i:j])
		switch cells[i] {
		case cellRuntime:
			run = m.st.TLRuntime.Render(run)
		case cellOwn:
			run = m.st.TLOwn.Render(run)
		case cellWait:
			run = m.st.TLWait.Render(run)
		}
		b.WriteString(run)
		i = j
	}
	return b.String()
}

// axis is the time axis over barW cells: round marks (1, 2 or 5 times a
// power of ten) at least 10 cells apart, each label starting at its mark.
func axis(span time.Duration, barW int) string {
	line := []rune(strings.Repeat(" ", barW))
	maxTicks := max(1, barW/10)
	step := time.Microsecond
	for mult := 0; span/step > time.Duration(maxTicks); mult++ {
		switch mult % 3 {
		case 0, 2:
			step *= 2
		case 1:
			step = step * 5 / 2
		}
	}
	for t := time.Duration(0); t <= span; t += step {
		c := int(math.Round(float64(t) / float64(span) * float64(barW)))
		label := "|" + tickLabel(t)
		if c+len([]rune(label)) > barW {
			break
		}
		copy(line[c:], []rune(label))
	}
	return string(line)
}

// tickLabel prints an axis mark: 0, 500µs, 20ms, 1.5s.
func tickLabel(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%gms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%gs", d.Seconds())
}

// scroll moves the timeline with the cursor keys, page rows at a time for
// pgup/pgdown; false for other keys.
func (m *timelineModel) scroll(k tea.KeyPressMsg, run timelineRun, page int) bool {
	rows, _, _, _ := m.rows(run)
	top := m.top
	if top < 0 {
		top = max(0, len(rows)-page)
	}
	switch {
	case key.Matches(k, m.keys.Up):
		top--
	case key.Matches(k, m.keys.Down):
		top++
	case key.Matches(k, m.keys.PgUp):
		top -= page
	case key.Matches(k, m.keys.PgDown):
		top += page
	default:
		return false
	}
	m.top = min(max(top, 0), max(0, len(rows)-page))
	return true
}
