package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key the TUI answers to; it is also the help bubble's KeyMap.
type keyMap struct {
	Next     key.Binding
	Continue key.Binding
	Break    key.Binding
	Retry    key.Binding
	Cancel   key.Binding
	Tab      key.Binding
	Up       key.Binding
	Down     key.Binding
	PgUp     key.Binding
	PgDown   key.Binding
	Help     key.Binding
	Quit     key.Binding
	ForceQ   key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Next:     key.NewBinding(key.WithKeys("space", "enter", "n"), key.WithHelp("space/n", "next step")),
		Continue: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "continue")),
		Break:    key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "breakpoint")),
		Retry:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry failed step")),
		Cancel:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel running call")),
		Tab:      key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "request/response/log")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PgUp:     key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll detail up")),
		PgDown:   key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll detail down")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQ:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "tear down and quit")),
	}
}

// ShortHelp is the one-line help bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Next, k.Continue, k.Break, k.Retry, k.Tab, k.Help, k.Quit}
}

// FullHelp is the help screen, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Next, k.Continue, k.Retry, k.Cancel},
		{k.Up, k.Down, k.PgUp, k.PgDown},
		{k.Break, k.Tab, k.Help, k.Quit, k.ForceQ},
	}
}
