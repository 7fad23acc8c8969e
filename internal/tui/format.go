package tui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// fit truncates s (which may hold ANSI styles) to w cells and pads it to
// exactly w, so panes line up.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := lipgloss.Width(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = lipgloss.Width(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// wrapTokens lays out styled tokens on lines of at most w cells.
func wrapTokens(tokens []string, w int, sep string) []string {
	var out []string
	line, n := "", 0
	for _, t := range tokens {
		tw := lipgloss.Width(t)
		if line != "" && n+len(sep)+tw > w {
			out = append(out, line)
			line, n = "", 0
		}
		if line != "" {
			line += sep
			n += len(sep)
		}
		line += t
		n += tw
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// styleYAML colours the keys of YAML lines.
func (st styles) styleYAML(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		trim := strings.TrimLeft(l, " -")
		k := strings.Index(trim, ":")
		if k <= 0 || strings.ContainsAny(trim[:k], " \"'") {
			out[i] = l
			continue
		}
		pre := l[:len(l)-len(trim)]
		out[i] = pre + st.Key.Render(trim[:k]) + trim[k:]
	}
	return out
}

// rule is a pane title: "── title ─────" across w cells.
func (st styles) rule(title string, w int) string {
	head := st.TitleDim.Render("─ ") + title + " "
	n := w - lipgloss.Width(head)
	if n < 0 {
		return fit(head, w)
	}
	return head + st.TitleDim.Render(strings.Repeat("─", n))
}

// window returns h lines of lines starting at top (clamped), padded with
// blank lines.
func window(lines []string, top, h int) ([]string, int) {
	if top > len(lines)-h {
		top = len(lines) - h
	}
	if top < 0 {
		top = 0
	}
	out := make([]string, 0, h)
	for i := top; i < len(lines) && len(out) < h; i++ {
		out = append(out, lines[i])
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out, top
}
