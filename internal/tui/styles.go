package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// styles holds every style the TUI uses. Colours are the 16 ANSI colours,
// so they follow the terminal's theme; the program's colour profile
// (NO_COLOR: ASCII) downsamples or drops them.
type styles struct {
	Header   lipgloss.Style
	Sim      lipgloss.Style
	Title    lipgloss.Style // pane titles
	TitleDim lipgloss.Style // the rest of a pane's title rule
	Rule     lipgloss.Style // the vertical separator
	Stage    lipgloss.Style
	Cursor   lipgloss.Style // the selected plan row
	NextStep lipgloss.Style // the step Next would run
	Done     lipgloss.Style
	Failed   lipgloss.Style
	Running  lipgloss.Style
	Pending  lipgloss.Style
	Skipped  lipgloss.Style
	Break    lipgloss.Style
	Dim      lipgloss.Style
	Bold     lipgloss.Style
	Changed  lipgloss.Style // what the last step changed
	Warning  lipgloss.Style
	Key      lipgloss.Style // YAML keys and method names
	Tab      lipgloss.Style // the active tab
	TabOff   lipgloss.Style
	Prompt   lipgloss.Style
	// The timeline's bars: the runtime's time, podstep's own, waiting.
	TLRuntime lipgloss.Style
	TLOwn     lipgloss.Style
	TLWait    lipgloss.Style
	Help      help.Styles
}

func newStyles() styles {
	c := lipgloss.Color
	keyS := lipgloss.NewStyle().Bold(true)
	descS := lipgloss.NewStyle().Faint(true)
	return styles{
		Header:    lipgloss.NewStyle().Bold(true),
		Sim:       lipgloss.NewStyle().Foreground(c("3")).Bold(true),
		Title:     lipgloss.NewStyle().Bold(true).Foreground(c("6")),
		TitleDim:  lipgloss.NewStyle().Faint(true),
		Rule:      lipgloss.NewStyle().Faint(true),
		Stage:     lipgloss.NewStyle().Bold(true).Foreground(c("6")),
		Cursor:    lipgloss.NewStyle().Reverse(true),
		NextStep:  lipgloss.NewStyle().Bold(true).Foreground(c("4")),
		Done:      lipgloss.NewStyle().Foreground(c("2")),
		Failed:    lipgloss.NewStyle().Foreground(c("1")).Bold(true),
		Running:   lipgloss.NewStyle().Foreground(c("3")),
		Pending:   lipgloss.NewStyle().Faint(true),
		Skipped:   lipgloss.NewStyle().Faint(true).Strikethrough(false),
		Break:     lipgloss.NewStyle().Foreground(c("1")),
		Dim:       lipgloss.NewStyle().Faint(true),
		Bold:      lipgloss.NewStyle().Bold(true),
		Changed:   lipgloss.NewStyle().Foreground(c("3")).Bold(true),
		Warning:   lipgloss.NewStyle().Foreground(c("3")),
		Key:       lipgloss.NewStyle().Foreground(c("4")),
		Tab:       lipgloss.NewStyle().Bold(true).Underline(true),
		TabOff:    lipgloss.NewStyle().Faint(true),
		Prompt:    lipgloss.NewStyle().Bold(true).Foreground(c("3")),
		TLRuntime: lipgloss.NewStyle().Foreground(c("4")),
		TLOwn:     lipgloss.NewStyle().Foreground(c("3")),
		TLWait:    lipgloss.NewStyle().Faint(true),
		Help: help.Styles{
			ShortKey: keyS, ShortDesc: descS, ShortSeparator: descS, Ellipsis: descS,
			FullKey: keyS, FullDesc: descS, FullSeparator: descS,
		},
	}
}
