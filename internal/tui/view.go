package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/render"
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
	l := layout{w: w, bodyH: h - 3}
	l.planW = min(max(w*3/8, 26), 44)
	l.rightW = w - l.planW - 1
	l.podH = min(podNeed, max(3, l.bodyH*3/10))
	l.eventsH = max(2, l.bodyH/5)
	l.stepH = l.bodyH - 3 - l.podH - l.eventsH
	return l
}

// layout computes the layout for the pod as it is now.
func (m *model) layout() layout {
	l := m.layoutFor(99)
	return m.layoutFor(len(m.podLines(l.rightW - 1)))
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

// render is the screen as a string: header, body, status line, help bar.
func (m *model) render() string {
	l := m.layoutFor(99)
	pod := m.podLines(l.rightW - 1)
	l = m.layoutFor(len(pod))

	lines := make([]string, 0, l.bodyH+3)
	lines = append(lines, m.headerView(l.w))
	if m.ui == uiHelp {
		lines = append(lines, m.helpScreen(l.w, l.bodyH)...)
	} else if m.screen == screenTimeline {
		lines = append(lines, m.tl.view(m.timeline(), l.w, l.bodyH)...)
	} else {
		plan := m.planView(l.planW, l.bodyH)
		right := make([]string, 0, l.bodyH)
		right = append(right, m.stepTitle(l.rightW))
		right = append(right, m.stepView(l.rightW, l.stepH)...)
		right = append(right, m.st.rule(m.st.Title.Render("pod"), l.rightW))
		podWin, _ := window(pod, 0, l.podH)
		if n := len(pod) - l.podH; n > 0 {
			podWin[l.podH-1] = m.st.Dim.Render(fmt.Sprintf("… %d more", n+1))
		}
		for _, p := range podWin {
			right = append(right, fit(" "+p, l.rightW))
		}
		right = append(right, m.eventsTitle(l.rightW))
		right = append(right, m.eventsView(l.rightW, l.eventsH)...)
		sep := m.st.Rule.Render("│")
		for i := 0; i < l.bodyH; i++ {
			lines = append(lines, fit(plan[i], l.planW)+sep+right[i])
		}
	}
	lines = append(lines, fit(m.statusView(l.w), l.w))
	lines = append(lines, fit(m.help.ShortHelpView(m.helpKeys().ShortHelp()), l.w))
	return strings.Join(lines, "\n")
}

// headerView names the pod and the runtime; a simulated runtime is said loudly.
func (m *model) headerView(w int) string {
	if m.replay != nil {
		return m.replay.header(w)
	}
	p := m.eng.Pod()
	left := m.st.Header.Render("podstep") + " pod " + m.st.Bold.Render(line(p.Namespace+"/"+p.Name))
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
		q := "tear the pod down? [Y/n]"
		if m.opts.Keep {
			q = "tear the pod down? [y/N]"
		}
		return st.Prompt.Render(q) + st.Dim.Render("  (n keeps it for `podstep cleanup`; esc: back)")
	case m.ui == uiQuitting:
		return st.Running.Render(m.spin.View()) + " cancelling the running call, then quitting…"
	case m.running.busy:
		what := ""
		if s, ok := m.stepByID(m.running.id); ok {
			what = fmt.Sprintf("%d %s", s.ID, s.Name)
		}
		if m.running.method != "" {
			what += " · " + m.running.method
		}
		if m.running.op == "continue" {
			what = "continuing: " + what
		}
		return st.Running.Render(m.spin.View()) + " " + what + " " + st.Dim.Render(m.fmtDur(m.now().Sub(m.running.start))+"  esc cancels")
	case m.flash != "":
		return st.Warning.Render(line(m.flash))
	}
	if f := m.failedStep(); f != nil {
		return st.Failed.Render(fmt.Sprintf("✗ step %d %s failed: %s", f.ID, line(f.Name), line(f.Result.Reason))) + st.Dim.Render(" · r retries, q quits")
	}
	if s, ok := m.stepByID(m.nextID); ok {
		return st.NextStep.Render("▸ next: ") + fmt.Sprintf("%d %s", s.ID, s.Title) + st.Dim.Render(" · space runs it, c continues")
	}
	return st.Done.Render("✓ all steps done: pod "+line(m.pod.Display)) + st.Dim.Render(" · q quits")
}

func (m *model) stepByID(id int) (s steps.Step, ok bool) {
	if id < 1 || id > len(m.steps) {
		return s, false
	}
	return m.steps[id-1], true
}

// helpScreen is the full help, shown on ?.
func (m *model) helpScreen(w, h int) []string {
	st := m.st
	lines := []string{st.rule(st.Title.Render("help"), w), ""}
	lines = append(lines, m.fullHelp(w-2)...)
	legend := []string{
		"",
		st.Bold.Render("plan marks"),
	}
	lines = append(lines, legend...)
	marks := []string{st.NextStep.Render("▸") + " next", st.Running.Render("⠋") + " running", st.Done.Render("✓") + " done",
		st.Failed.Render("✗") + " failed", st.Pending.Render("·") + " pending", "- skipped", st.Break.Render("●") + " breakpoint"}
	for _, l := range wrapTokens(marks, w-4, "   ") {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "", st.Bold.Render("panes"))
	last := "Each step sends real CRI calls; nothing runs until you press space, n or c."
	if m.replay != nil {
		last = "A replay: each screen is the recording's after N steps ran; nothing is sent to any runtime."
	}
	for _, t := range []string{
		"step: what the kubelet does, the function it mirrors, and the CRI requests (tab: responses, container log).",
		"pod: `kubectl get pod`, phase and conditions, each container's state; what the last step changed is highlighted.",
		"events: the kubelet's events for the pod; in log mode, the selected container's log file.",
		"t: the timeline, a bar per step and per CRI call on one time axis: the runtime's time, podstep's own and deliberate waiting.",
		last,
	} {
		for _, l := range render.Wrap(t, w-4) {
			lines = append(lines, "  "+l)
		}
	}
	lines = append(lines, "", st.Dim.Render("  any key closes this help"))
	out, _ := window(lines, 0, h)
	for i, l := range out {
		out[i] = fit(l, w)
	}
	return out
}

// fullHelp lays out the key groups side by side when they fit, else one
// under the other.
func (m *model) fullHelp(w int) []string {
	var cols [][]string
	for _, g := range m.helpKeys().FullHelp() {
		kw := 0
		for _, b := range g {
			kw = max(kw, lipgloss.Width(b.Help().Key))
		}
		var col []string
		for _, b := range g {
			col = append(col, m.st.Help.FullKey.Render(fit(b.Help().Key, kw))+" "+m.st.Help.FullDesc.Render(b.Help().Desc))
		}
		cols = append(cols, col)
	}
	for _, gap := range []string{"    ", "  "} {
		side := lipgloss.JoinHorizontal(lipgloss.Top, interleave(cols, gap)...)
		if lipgloss.Width(side) <= w-2 {
			out := strings.Split(side, "\n")
			for i := range out {
				out[i] = "  " + out[i]
			}
			return out
		}
	}
	var out []string
	for i, c := range cols {
		if i > 0 {
			out = append(out, "")
		}
		for _, l := range c {
			out = append(out, "  "+l)
		}
	}
	return out
}

func interleave(cols [][]string, gap string) []string {
	var out []string
	for i, c := range cols {
		if i > 0 {
			out = append(out, gap)
		}
		out = append(out, strings.Join(c, "\n"))
	}
	return out
}
