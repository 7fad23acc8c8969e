package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/podstep/podstep/internal/render"
)

// helpModel is the help screen (?): every key, the plan's marks, what
// each pane shows.
type helpModel struct {
	*common
	// top is the first line shown: a help longer than the screen scrolls.
	top int
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
	if len(lines) <= h {
		m.top = 0
		out, _ := window(lines, 0, h)
		for i, l := range out {
			out[i] = fit(l, w)
		}
		return out
	}
	// Too long for the screen: the title stays, the rest scrolls, and
	// the first and last lines say what is above and below.
	body := lines[1:]
	rows := max(1, h-1)
	m.top = min(max(m.top, 0), len(body)-rows)
	win, top := window(body, m.top, rows)
	if top > 0 {
		win[0] = st.Dim.Render(fmt.Sprintf("  ↑ %d more (↑/pgup)", top))
	}
	if rest := len(body) - top - rows; rest > 0 {
		win[rows-1] = st.Dim.Render(fmt.Sprintf("  ↓ %d more (↓/pgdn); any other key closes this help", rest))
	}
	out := append([]string{lines[0]}, win...)
	for i, l := range out {
		out[i] = fit(l, w)
	}
	return out[:h]
}

// scroll moves a long help with the cursor keys; false for other keys
// (they close it).
func (m *helpModel) scroll(k tea.KeyPressMsg, page int) bool {
	switch {
	case key.Matches(k, m.keys.Up):
		m.top--
	case key.Matches(k, m.keys.Down):
		m.top++
	case key.Matches(k, m.keys.PgUp):
		m.top -= max(1, page-2)
	case key.Matches(k, m.keys.PgDown):
		m.top += max(1, page-2)
	default:
		return false
	}
	m.top = max(m.top, 0) // view clamps the end
	return true
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

// barKeys is a help bar's keys: ShortHelp in its order, Keep by need.
type barKeys interface {
	help.KeyMap
	Keep() []key.Binding
}

// footer is the help bar in w cells: the keys of ShortHelp in their order,
// dropping the least needed (the end of Keep) until the bar fits, so that
// ? and q stay on any screen; the help bubble itself cut the bar's end.
func footer(h help.Model, keys barKeys, w int) string {
	h.SetWidth(0) // no cut of its own: footer chooses what fits
	short := keys.ShortHelp()
	keep := keys.Keep()
	for n := len(keep); ; n-- {
		var bar []key.Binding
		for _, b := range short {
			for _, k := range keep[:n] {
				if sameKey(b, k) {
					bar = append(bar, b)
					break
				}
			}
		}
		view := h.ShortHelpView(bar)
		if lipgloss.Width(view) <= w || n <= 1 {
			return fit(view, w)
		}
	}
}

// sameKey says two bindings are the same key (their help's key text).
func sameKey(a, b key.Binding) bool { return a.Help().Key == b.Help().Key }
