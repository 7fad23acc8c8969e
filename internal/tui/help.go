package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/render"
)

// helpModel is the help screen (?): every key, the plan's marks, what
// each pane shows.
type helpModel struct {
	*common
}

// view is the help screen: h lines of w cells, for keys (a replay's, when
// replay).
func (m *helpModel) view(keys help.KeyMap, replay bool, w, h int) []string {
	st := m.st
	lines := []string{st.rule(st.Title.Render("help"), w), ""}
	lines = append(lines, m.fullHelp(keys, w-2)...)
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
	if replay {
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
func (m *helpModel) fullHelp(keys help.KeyMap, w int) []string {
	var cols [][]string
	for _, g := range keys.FullHelp() {
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
