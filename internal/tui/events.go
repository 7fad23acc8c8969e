package tui

import (
	"errors"
	"io/fs"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// eventsModel is the events pane: the kubelet's events for the pod, or,
// in log mode (the step pane's tab), a container's log, which it keeps.
type eventsModel struct {
	*common
	log logView
}

// title is the events pane's title (or the log's, in log mode).
func (m *eventsModel) title(mode detailMode, w int) string {
	if mode == modeLog {
		t := m.st.Title.Render("log")
		if m.log.container != "" {
			t += " " + m.st.Bold.Render(m.log.container)
		}
		return m.st.rule(t, w)
	}
	return m.st.rule(m.st.Title.Render("events")+m.st.Dim.Render(" (kubelet)"), w)
}

// view renders h lines of w cells: the latest kubelet events, or the
// selected container's log in log mode.
func (m *eventsModel) view(rv runView, mode detailMode, w, h int) []string {
	var lines []string
	if mode == modeLog {
		lines = m.logLines()
	} else {
		lines = m.eventLines(rv, rv.pod.Events, h, w-1)
	}
	// Show the end: the newest events and log lines.
	top := len(lines) - h
	win, _ := window(lines, top, h)
	for i, l := range win {
		win[i] = fit(" "+l, w)
	}
	return win
}

// eventLines formats events as `kubectl describe pod` does (TYPE REASON
// OBJECT MESSAGE) in at most h lines of w cells: the newest that fit,
// each message wrapped at word boundaries under its column (a word wider
// than the line is cut with an ellipsis); the newest event alone ends
// "…" when it needs more than h lines. The last step's events are marked.
func (m *eventsModel) eventLines(rv runView, evs []podstate.Event, h, w int) []string {
	if len(evs) == 0 {
		return []string{m.st.Dim.Render("no events yet")}
	}
	from := max(0, len(evs)-h)
	// Narrow panes name the object by its container only ("app", "pod").
	narrow := w < 90
	obj := func(e podstate.Event) string {
		if !narrow {
			return line(e.Object)
		}
		if i := strings.IndexByte(e.Object, '{'); i >= 0 && strings.HasSuffix(e.Object, "}") {
			return line(e.Object[i+1 : len(e.Object)-1])
		}
		return "pod"
	}
	rw, ow := 6, 3
	for _, e := range evs[from:] {
		rw = max(rw, len(line(e.Reason)))
		ow = max(ow, len(obj(e)))
	}
	rw = min(rw, 22)
	ow = min(ow, max(8, w/3))
	var groups [][]string
	for i := from; i < len(evs); i++ {
		e := evs[i]
		typ := fit(line(e.Type), 8)
		if e.Type == "Warning" {
			typ = m.st.Warning.Render(typ)
		}
		head := typ + fit(line(e.Reason), rw+1) + m.st.Dim.Render(fit(obj(e), ow+1))
		if rv.last.event(i) {
			head = m.st.Changed.Render("•") + head
		} else {
			head = " " + head
		}
		// The message under its column, or under the type when that
		// leaves it less than a third of the line.
		indent := lipgloss.Width(head)
		if w-indent < w/3 {
			indent = 9
		}
		msg := wrapWords(line(e.Message), w-lipgloss.Width(head), w-indent)
		g := []string{head + msg[0]}
		for _, l := range msg[1:] {
			g = append(g, strings.Repeat(" ", indent)+l)
		}
		groups = append(groups, g)
	}
	// The newest events that fit in h lines, oldest first.
	var out []string
	n := 0
	first := len(groups)
	for first > 0 && n+len(groups[first-1]) <= h {
		first--
		n += len(groups[first])
	}
	if first == len(groups) {
		// The newest alone is too long: its first h lines, the last
		// ending "…" after a whole word.
		g := groups[len(groups)-1]
		return append(g[:h-1:h-1], ellipsis(g[h-1], w))
	}
	// Rows left over: the next older event's first lines, ending "…".
	if rem := h - n; rem > 0 && first > 0 {
		g := groups[first-1]
		out = append(out, g[:rem-1]...)
		out = append(out, ellipsis(g[rem-1], w))
	}
	for _, g := range groups[first:] {
		out = append(out, g...)
	}
	return out
}

// ellipsis is l ending " …" after its last whole word that leaves room
// for it in w cells.
func ellipsis(l string, w int) string {
	l = strings.TrimRight(l, " ")
	for lipgloss.Width(l)+2 > w {
		k := strings.LastIndexByte(l, ' ')
		if k <= 0 || strings.TrimSpace(ansi.Strip(l[:k])) == "" {
			l = ansi.Truncate(l, w-2, "")
			break
		}
		l = strings.TrimRight(l[:k], " ")
	}
	return l + " …"
}

// wrapWords breaks plain text into lines at spaces: the first at most
// first cells, the others at most rest; a word wider than its line is cut
// with an ellipsis. It always returns at least one line.
func wrapWords(s string, first, rest int) []string {
	first, rest = max(first, 1), max(rest, 1)
	var out []string
	cur := ""
	room := func() int {
		if len(out) == 0 {
			return first
		}
		return rest
	}
	for _, word := range strings.Fields(s) {
		ww := lipgloss.Width(word)
		if cur != "" && lipgloss.Width(cur)+1+ww <= room() {
			cur += " " + word
			continue
		}
		if cur != "" {
			out = append(out, cur)
			cur = ""
		}
		if ww > room() && len(out) == 0 && first < rest {
			out = append(out, "") // the word starts on the wider next line
		}
		if ww > room() {
			out = append(out, fit(word, room()))
			continue
		}
		cur = word
	}
	if cur != "" || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// logView is the log of the container log mode shows.
type logView struct {
	container string
	lines     []string
	err       string
}

// logMax is how many of a log's last lines log mode keeps.
const logMax = 1000

// load reads the selected step's container's log (or the last created
// container's, for steps about no container). The engine masks it.
func (m *eventsModel) load(eng Engine, rv runView) {
	name := ""
	if rv.hasSel {
		name = rv.sel.Container
	}
	var lines []steps.LogLine
	err := steps.ErrNoContainer
	if name != "" {
		lines, err = eng.ContainerLog(name, logMax)
	}
	if errors.Is(err, steps.ErrNoContainer) {
		for i := len(rv.steps) - 1; i >= 0; i-- {
			if c := rv.steps[i].Container; c != "" {
				if lines, err = eng.ContainerLog(c, logMax); !errors.Is(err, steps.ErrNoContainer) {
					name = c
					break
				}
			}
		}
	}
	m.log = logView{container: line(name)}
	switch {
	case errors.Is(err, steps.ErrNoContainer):
		m.log = logView{err: "no container created yet"}
	case errors.Is(err, fs.ErrNotExist):
		m.log.err = "no log yet: the container has not started"
	case err != nil:
		m.log.err = "no log yet (" + line(err.Error()) + ")"
	}
	for _, l := range lines {
		msg := line(l.Text)
		if l.Stream == "stderr" {
			msg = m.st.Warning.Render(msg)
		}
		m.log.lines = append(m.log.lines, msg)
	}
}

func (m *eventsModel) logLines() []string {
	if m.log.err != "" {
		return []string{m.st.Dim.Render(m.log.err)}
	}
	if len(m.log.lines) == 0 {
		return []string{m.st.Dim.Render("(the log is empty)")}
	}
	return m.log.lines
}
