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
	Timeline key.Binding
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
		Next:     key.NewBinding(key.WithKeys("space", "enter", "n"), key.WithHelp("space/n", "next")),
		Continue: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "continue")),
		Break:    key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "break")),
		Retry:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry")),
		Cancel:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel the call")),
		Tab:      key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "view")),
		Timeline: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "timeline")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PgUp:     key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up")),
		PgDown:   key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll down")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQ:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "tear down + quit")),
	}
}

// ShortHelp is the one-line help bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Next, k.Continue, k.Retry, k.Break, k.Tab, k.Help, k.Quit, k.Timeline}
}

// FullHelp is the help screen, in columns, with longer descriptions.
func (k keyMap) FullHelp() [][]key.Binding {
	long := func(b key.Binding, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
	}
	return [][]key.Binding{
		{long(k.Next, "run the next step"), long(k.Continue, "run to breakpoint/end"), long(k.Retry, "retry failed step"), long(k.Cancel, "cancel the call")},
		{k.Up, k.Down, k.PgUp, k.PgDown},
		{long(k.Break, "toggle breakpoint"), long(k.Tab, "request/response/log"), long(k.Timeline, "timeline (toggle)"), k.Help, long(k.Quit, "quit (asks)"), k.ForceQ},
	}
}
