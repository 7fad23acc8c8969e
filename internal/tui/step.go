package tui

import (
	"fmt"
	"github.com/podstep/podstep/internal/explain"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"google.golang.org/protobuf/proto"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// detailMode is what the step pane's lower part shows (tab cycles it).
type detailMode int

const (
	modeRequest detailMode = iota
	modeResponse
	modeLog
)

func (d detailMode) String() string {
	return [...]string{"request", "response", "log"}[d]
}

// stepModel is the step pane's own state: what its lower part shows (tab
// cycles request, response, log), how far it is scrolled, the rendered
// lines kept for the step shown, and the log read for it.
type stepModel struct {
	*common
	mode   detailMode
	scroll int
	detail detailCache
}

// detailCache keeps the step pane's lines until the step, mode or width
// changes; rendering CRI messages as YAML is the costly part of a frame.
type detailCache struct {
	key   string
	lines []string
}

func ansiStrip(s string) string { return strings.TrimSpace(ansi.Strip(s)) }

// title is the step pane's title rule with the tabs.
func (m *stepModel) title(rv runView, w int) string {
	title := m.st.Title.Render("step")
	if rv.hasSel {
		// The step's ID, not a counter: the plan's title counts.
		title = m.st.Title.Render(fmt.Sprintf("step %d", rv.sel.ID))
	}
	var tabs []string
	for d := modeRequest; d <= modeLog; d++ {
		if d == m.mode {
			tabs = append(tabs, m.st.Tab.Render(d.String()))
		} else {
			tabs = append(tabs, m.st.TabOff.Render(d.String()))
		}
	}
	return m.st.rule(title+" "+m.st.Dim.Render("─")+" "+strings.Join(tabs, m.st.Dim.Render(" · ")), w)
}

// view renders the step pane's content: h lines of w cells.
func (m *stepModel) view(rv runView, w, h int) []string {
	lines := m.lines(rv, w-1)
	if m.scroll > len(lines)-h {
		m.scroll = max(0, len(lines)-h)
	}
	win, _ := window(lines, m.scroll, h)
	for i, l := range win {
		win[i] = fit(" "+l, w)
	}
	if m.scroll > 0 && h > 0 {
		win[0] = fit(m.st.Dim.Render(fmt.Sprintf(" ↑ %d more (pgup)", m.scroll)), w)
	}
	if rest := len(lines) - m.scroll - h; rest > 0 && h > 1 {
		win[h-1] = fit(m.st.Dim.Render(fmt.Sprintf(" ↓ %d more (pgdn)", rest)), w)
	}
	return win
}

// lines renders the selected step in full, cached.
func (m *stepModel) lines(rv runView, w int) []string {
	if !rv.hasSel {
		return nil
	}
	s := rv.sel
	k := fmt.Sprintf("%d/%d/%d/%d/%t/%d", s.ID, rv.ver, m.mode, w, s.ID == rv.nextID, rv.failedID)
	if s.State == steps.Running {
		k = "" // elapsed time changes every frame
	}
	if k != "" && m.detail.key == k {
		return m.detail.lines
	}
	lines := m.render(rv, s, w)
	m.detail = detailCache{key: k, lines: lines}
	return lines
}

// render is step s in full: its state, result, changes, details and
// warnings, what the kubelet does, and its CRI requests or responses.
func (m *stepModel) render(rv runView, s steps.Step, w int) []string {
	st := m.st
	var out []string
	add := func(l ...string) { out = append(out, l...) }
	mark, ms := m.mark(rv, s)
	add(ms.Render(mark) + " " + st.Bold.Render(s.Title) + st.Dim.Render("  ["+s.Name+"]"))

	switch s.State {
	case steps.Pending:
		if s.ID == rv.nextID {
			add(st.NextStep.Render("next step: space runs it"))
		} else {
			add(st.Dim.Render("pending"))
		}
	case steps.Running:
		l := fmt.Sprintf("running %s", m.fmtDur(m.now().Sub(rv.since(s))))
		if rv.running.method != "" {
			l += " · waiting for " + rv.running.method
		}
		add(st.Running.Render(l))
		if rv.running.id == s.ID {
			if wl := rv.running.waitLine(m.now(), false); wl != "" {
				for _, l := range render.Wrap(wl, w) {
					add(st.Running.Render(l))
				}
			}
		}
	case steps.Skipped:
		add(st.Dim.Render("skipped: an earlier step failed"))
	case steps.Done:
		for _, l := range render.Wrap(fmt.Sprintf("done in %s: %s", m.fmtDur(s.Duration), s.Result.Summary), w) {
			add(st.Done.Render(l))
		}
		add(m.changeLines(s, w)...)
	case steps.Failed:
		msg := s.Result.Summary
		if s.Result.Reason != "" {
			msg = s.Result.Reason + ": " + s.Result.Message
		}
		for _, l := range render.Wrap(fmt.Sprintf("failed after %s: %s", m.fmtDur(s.Duration), msg), w) {
			add(st.Failed.Render(l))
		}
		add(explanationLines(st, s.Result.Explanation, w)...)
		add(m.changeLines(s, w)...)
		switch {
		case rv.replay:
		case s.ID == rv.failedID:
			add(st.Dim.Render("r retries this step, q quits"))
		case s.Stage != steps.StageTeardown && !rv.running.busy && rv.failedID == 0:
			// A failure the kubelet recovers from: the restart is planned.
			add(st.Dim.Render("the kubelet goes on (a restart is planned): space runs the next step"))
		}
	}
	for _, d := range s.Result.Details {
		if d.Key == specVsSentKey {
			add(m.specVsSentLines(d.Value, w)...)
			continue
		}
		// One line each; long IDs and paths are cut (the JSON output has them whole).
		add("  " + st.Dim.Render(d.Key+":") + " " + d.Value)
	}
	for _, ro := range s.Result.RestsOn {
		for i, l := range render.Wrap("rests on: "+ro, w-2) {
			if i == 0 {
				add(st.Dim.Render("~ " + l))
			} else {
				add(st.Dim.Render("  " + l))
			}
		}
	}
	for _, wn := range s.Result.Warnings {
		for i, l := range render.Wrap(wn, w-2) {
			if i == 0 {
				add(st.Warning.Render("! " + l))
			} else {
				add(st.Warning.Render("  " + l))
			}
		}
	}
	explain := func() {
		add("")
		add(render.Wrap(s.Explain, w)...)
		if s.Mirrors != "" {
			for _, l := range render.Wrap("kubelet: "+s.Mirrors, w) {
				add(st.Dim.Render(l))
			}
		}
	}
	calls := func() {
		add("")
		if m.mode == modeRequest {
			add(m.requestLines(rv, s, w)...)
		} else {
			add(m.responseLines(rv, s, w)...)
		}
	}
	// Before a step runs, what the kubelet is about to do comes first;
	// once it ran, what the runtime answered.
	if s.State == steps.Pending || s.State == steps.Skipped {
		explain()
		calls()
	} else {
		calls()
		explain()
	}
	return out
}

// changeLines say what step s changed in the pod, in the words of the
// --auto text (podstate.FormatChanges of the engine's diff): what the pod
// pane highlights after the last step, for a reader who cannot see colour.
func (m *stepModel) changeLines(s steps.Step, w int) []string {
	if len(s.Changes) == 0 {
		return []string{m.st.Dim.Render("pod: unchanged")}
	}
	lines := render.Wrap(podstate.FormatChanges(s.Changes), w-5)
	for i, l := range lines {
		if i == 0 {
			lines[i] = m.st.Changed.Render("pod:") + " " + l
		} else {
			lines[i] = "     " + l
		}
	}
	return lines
}

// callStatus is "OK 0.7ms" or "Unknown: message 0.3ms".
func (m *stepModel) callStatus(c cri.Call) string {
	if c.Err != nil {
		return m.st.Failed.Render(c.Code().String()+": "+line(c.ErrorMessage())) + " " + m.st.Dim.Render(m.fmtDur(c.Duration))
	}
	return m.st.Done.Render("OK") + " " + m.st.Dim.Render(m.fmtDur(c.Duration))
}

// requestLines are the step's CRI requests: the ones sent once it ran,
// else the ones it will send, rebuilt from what the engine knows now.
func (m *stepModel) requestLines(rv runView, s steps.Step, w int) []string {
	var out []string
	if len(s.Calls) > 0 {
		for i, c := range s.Calls {
			head := m.st.Bold.Render(line(c.Method)) + " → " + m.callStatus(c)
			out = append(out, m.msgLines(head, c.Request, w)...)
			if i == len(s.Calls)-1 && s.State == steps.Running && rv.running.method != "" {
				out = append(out, m.st.Running.Render(rv.running.method+" sent, waiting…"))
			}
		}
		return out
	}
	if len(s.Requests) == 0 {
		return []string{m.st.Dim.Render("(no CRI call: the kubelet does this itself)")}
	}
	what := "will send"
	if s.State == steps.Skipped {
		what = "would send"
	}
	// The engine redacted them (steps.Engine.requests).
	for _, r := range s.Requests {
		out = append(out, m.msgLines(m.st.Bold.Render(line(r.Method))+m.st.Dim.Render(" request ("+what+")"), r.Message, w)...)
	}
	return out
}

// responseLines are the responses (or errors) of the step's calls.
func (m *stepModel) responseLines(rv runView, s steps.Step, w int) []string {
	if len(s.Calls) == 0 {
		switch {
		case len(s.Requests) == 0:
			return []string{m.st.Dim.Render("(no CRI call: the kubelet does this itself)")}
		case s.State == steps.Running:
			return []string{m.st.Running.Render("waiting for " + line(s.Requests[0].Method) + "…")}
		case s.State == steps.Skipped:
			return []string{m.st.Dim.Render("(not sent: the step was skipped)")}
		}
		return []string{m.st.Dim.Render("(not sent yet: space runs this step)")}
	}
	var out []string
	for _, c := range s.Calls {
		head := m.st.Bold.Render(line(c.Method)) + " → " + m.callStatus(c)
		if c.Err != nil {
			out = append(out, head)
			for _, l := range render.Wrap(text(c.ErrorMessage()), w-2) {
				out = append(out, "  "+m.st.Failed.Render(l))
			}
			continue
		}
		out = append(out, m.msgLines(head, c.Response, w)...)
	}
	if s.State == steps.Running && rv.running.method != "" {
		out = append(out, m.st.Running.Render("waiting for "+rv.running.method+"…"))
	}
	return out
}

// msgLines is a heading and a message as indented YAML; lines wider than
// the pane are cut (pgup/pgdn scroll; `podstep plan` prints them whole).
func (m *stepModel) msgLines(head string, msg proto.Message, w int) []string {
	out := []string{head}
	lines := render.ProtoYAML(msg)
	for i, l := range lines {
		lines[i] = line(l)
	}
	for _, l := range m.st.styleYAML(lines) {
		out = append(out, "  "+l)
	}
	return out
}

// specVsSentKey is the detail `podstep proxy --kubeconfig/--manifest` puts
// on a create step: the pod's desired spec beside the CreateContainer
// config the kubelet sent (watch.specVsSent).
const specVsSentKey = "spec vs sent"

// specVsSentFields are the fields a "spec vs sent" detail compares, each
// the start of one of its "; "-separated parts.
var specVsSentFields = []string{"image:", "command:", "args:", "workingDir:", "env:", "mounts:", "ports:", "restartPolicy:", "the spec has no container"}

// specVsSentLines shows the comparison whole, one difference per line,
// wrapped: the one line a detail gets would cut all but the first.
func (m *stepModel) specVsSentLines(v string, w int) []string {
	out := []string{"  " + m.st.Dim.Render(specVsSentKey+":")}
	for _, part := range splitSpecVsSent(v) {
		for i, l := range render.Wrap(line(part), w-6) {
			if i == 0 {
				out = append(out, "    "+m.st.Changed.Render("≠")+" "+l)
			} else {
				out = append(out, "      "+l)
			}
		}
	}
	if strings.HasPrefix(v, "as the spec") {
		out = out[:1]
		for _, l := range render.Wrap(line(v), w-4) {
			out = append(out, "    "+l)
		}
	}
	return out
}

// splitSpecVsSent splits a "spec vs sent" detail into its differences: at
// "; " followed by a field, so a "; " inside a command stays in it.
func splitSpecVsSent(v string) []string {
	var out []string
	for _, p := range strings.Split(v, "; ") {
		field := false
		for _, f := range specVsSentFields {
			if strings.HasPrefix(p, f) {
				field = true
				break
			}
		}
		if field || len(out) == 0 {
			out = append(out, p)
		} else {
			out[len(out)-1] += "; " + p
		}
	}
	return out
}

// explanationLines show a failed step's explanation (internal/explain): what
// failed, the likeliest cause, one command to confirm and the fix; `podstep
// explain ID` has the rest.
func explanationLines(st styles, x *explain.Explanation, w int) []string {
	if x == nil {
		return nil
	}
	var out []string
	add := func(label, text string) {
		for i, l := range render.Wrap(label+text, w-2) {
			if i == 0 {
				out = append(out, "  "+st.Dim.Render(l))
			} else {
				out = append(out, "    "+st.Dim.Render(l))
			}
		}
	}
	for _, l := range render.Wrap("why: "+x.Title+" (podstep explain "+x.ID+")", w) {
		out = append(out, st.Warning.Render(l))
	}
	if len(x.Causes) > 0 {
		add("likely: ", x.Causes[0])
	}
	if len(x.Confirm) > 0 {
		add("confirm: ", x.Confirm[0])
	}
	add("fix: ", x.Fix)
	return out
}
