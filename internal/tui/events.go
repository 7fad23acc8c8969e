package tui

import (
	"bufio"
	"os"
	"strings"

	"github.com/podstep/podstep/internal/podstate"
)

// eventsTitle is the events pane's title (or the log's, in log mode).
func (m *model) eventsTitle(w int) string {
	if m.mode == modeLog {
		t := m.st.Title.Render("log")
		if m.log.container != "" {
			t += " " + m.st.Bold.Render(m.log.container)
		}
		return m.st.rule(t, w)
	}
	return m.st.rule(m.st.Title.Render("events")+m.st.Dim.Render(" (kubelet)"), w)
}

// eventsView renders h lines of w cells: the latest kubelet events, or the
// selected container's log in log mode.
func (m *model) eventsView(w, h int) []string {
	var lines []string
	if m.mode == modeLog {
		lines = m.logLines()
	} else {
		lines = m.eventLines(m.pod.Events, len(m.before.Events), h, w)
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
// OBJECT MESSAGE); only the last h are formatted. Events from index seen
// on are new in the last step.
func (m *model) eventLines(evs []podstate.Event, seen, h, w int) []string {
	if len(evs) == 0 {
		return []string{m.st.Dim.Render("no events yet")}
	}
	from := max(0, len(evs)-h)
	// Narrow panes name the object by its container only ("app", "pod").
	narrow := w < 90
	obj := func(e podstate.Event) string {
		if !narrow {
			return e.Object
		}
		if i := strings.IndexByte(e.Object, '{'); i >= 0 && strings.HasSuffix(e.Object, "}") {
			return e.Object[i+1 : len(e.Object)-1]
		}
		return "pod"
	}
	rw, ow := 6, 3
	for _, e := range evs[from:] {
		rw = max(rw, len(e.Reason))
		ow = max(ow, len(obj(e)))
	}
	rw = min(rw, 22)
	ow = min(ow, max(8, w/3))
	var out []string
	for i := from; i < len(evs); i++ {
		e := evs[i]
		typ := fit(e.Type, 8)
		if e.Type == "Warning" {
			typ = m.st.Warning.Render(typ)
		}
		l := typ + fit(e.Reason, rw+1) + m.st.Dim.Render(fit(obj(e), ow+1)) + e.Message
		if i >= seen && len(m.before.Events) < len(m.pod.Events) {
			l = m.st.Changed.Render("•") + l
		} else {
			l = " " + l
		}
		out = append(out, l)
	}
	return out
}

// logView is the log of the container log mode shows.
type logView struct {
	container string
	path      string
	lines     []string
	err       string
}

// loadLog reads the selected step's container's log file (or the last
// created container's, for steps about no container).
func (m *model) loadLog() {
	if m.mode != modeLog {
		return
	}
	name := ""
	if s, ok := m.selected(); ok {
		name = s.Container
	}
	if name == "" || m.eng.ContainerLogPath(name) == "" {
		name = ""
		for i := len(m.steps) - 1; i >= 0; i-- {
			if c := m.steps[i].Container; c != "" && m.eng.ContainerLogPath(c) != "" {
				name = c
				break
			}
		}
	}
	m.log = logView{container: name}
	if name == "" {
		m.log.err = "no container created yet"
		return
	}
	m.log.path = m.eng.ContainerLogPath(name)
	f, err := os.Open(m.log.path)
	if err != nil {
		m.log.err = "no log yet (" + err.Error() + ")"
		if os.IsNotExist(err) {
			m.log.err = "no log yet: the container has not started"
		}
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	// A container may print a secret it was given: masked as the engine
	// masks everything else it shows.
	red := m.eng.Redactor()
	for sc.Scan() {
		stream, msg := parseCRILog(sc.Text())
		msg = red.Text(msg)
		if stream == "stderr" {
			msg = m.st.Warning.Render(msg)
		}
		m.log.lines = append(m.log.lines, msg)
		if len(m.log.lines) > 1000 {
			m.log.lines = m.log.lines[500:]
		}
	}
}

func (m *model) logLines() []string {
	if m.log.err != "" {
		return []string{m.st.Dim.Render(m.log.err)}
	}
	if len(m.log.lines) == 0 {
		return []string{m.st.Dim.Render("(the log is empty)")}
	}
	return m.log.lines
}

// parseCRILog splits a CRI log line ("TIME STREAM TAG MESSAGE") and
// returns its stream and message; other lines are returned whole.
func parseCRILog(l string) (stream, msg string) {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 3 || (f[1] != "stdout" && f[1] != "stderr") {
		return "", l
	}
	if len(f) == 3 {
		return f[1], ""
	}
	return f[1], f[3]
}
