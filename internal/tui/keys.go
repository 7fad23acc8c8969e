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
	Cluster  key.Binding
	Up       key.Binding
	Down     key.Binding
	PgUp     key.Binding
	PgDown   key.Binding
	Help     key.Binding
	Quit     key.Binding
	ForceQ   key.Binding
	// Answer and Skip are predict mode's (predict.go): while a question
	// waits they come before every other key but ctrl+c (b and c are
	// answers then).
	Answer key.Binding
	Skip   key.Binding
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
		// K: k is up (vim); "K" for Kubernetes, the cluster's view.
		Cluster: key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "cluster")),
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PgUp:    key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up")),
		PgDown:  key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll down")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQ:  key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "tear down + quit")),
		Answer:  key.NewBinding(key.WithKeys("1", "2", "3", "4", "a", "b", "c", "d"), key.WithHelp("1-4/a-d", "answer")),
		Skip:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip")),
	}
}

// ShortHelp is the one-line help bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Next, k.Continue, k.Retry, k.Break, k.Tab, k.Help, k.Quit, k.Timeline}
}

// Keep is the help bar's keys, most needed first: a narrow bar drops
// them from the end (footer).
func (k keyMap) Keep() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Next, k.Continue, k.Timeline, k.Retry, k.Tab, k.Break}
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

// clusterHelp is the help bar of a run whose pod is a cluster's (run
// --pod, Options.Cluster): K as well.
type clusterHelp struct{ k keyMap }

// ShortHelp is the one-line help bar with K after t.
func (h clusterHelp) ShortHelp() []key.Binding {
	return append(h.k.ShortHelp(), h.k.Cluster)
}

// Keep keeps K before r, tab and b: on a --pod run it is what the user
// came for.
func (h clusterHelp) Keep() []key.Binding {
	k := h.k
	return []key.Binding{k.Help, k.Quit, k.Next, k.Continue, k.Timeline, k.Cluster, k.Retry, k.Tab, k.Break}
}

// FullHelp is the help screen with K in the last column.
func (h clusterHelp) FullHelp() [][]key.Binding {
	cols := h.k.FullHelp()
	last := len(cols) - 1
	k := key.NewBinding(key.WithKeys(h.k.Cluster.Keys()...), key.WithHelp("K", "cluster's view (again: re-read, hide)"))
	cols[last] = append(cols[last][:2:2], append([]key.Binding{k}, cols[last][2:]...)...)
	return cols
}

// predictHelp is the help bar in predict mode: the answer keys and s
// first, no c (off: every step asks first).
type predictHelp struct{ k keyMap }

// ShortHelp is the one-line help bar of predict mode.
func (h predictHelp) ShortHelp() []key.Binding {
	k := h.k
	return []key.Binding{k.Answer, k.Skip, k.Next, k.Retry, k.Break, k.Tab, k.Help, k.Quit, k.Timeline}
}

// Keep keeps the answer keys and space right after ? and q.
func (h predictHelp) Keep() []key.Binding {
	k := h.k
	return []key.Binding{k.Help, k.Quit, k.Answer, k.Next, k.Skip, k.Timeline, k.Retry, k.Tab, k.Break}
}

// FullHelp is the help screen with predict mode's keys in the first column.
func (h predictHelp) FullHelp() [][]key.Binding {
	cols := h.k.FullHelp()
	k := h.k
	cols[0] = []key.Binding{
		key.NewBinding(key.WithKeys(k.Answer.Keys()...), key.WithHelp("1-4/a-d", "answer the question")),
		key.NewBinding(key.WithKeys(k.Skip.Keys()...), key.WithHelp("s", "skip the question")),
		key.NewBinding(key.WithKeys(k.Next.Keys()...), key.WithHelp("space/n", "run the step (after an answer)")),
		key.NewBinding(key.WithKeys(k.Retry.Keys()...), key.WithHelp("r", "retry failed step")),
		key.NewBinding(key.WithKeys(k.Cancel.Keys()...), key.WithHelp("esc", "cancel call / hide verdict")),
	}
	return cols
}

// replayKeys are the keys only a replay has.
type replayKeys struct {
	Back     key.Binding
	Forward  key.Binding // → : Next's other key in a replay, not in the help
	Goto     key.Binding
	ContBack key.Binding
	// The g prompt's keys (digits edit the number).
	GotoGo     key.Binding
	GotoDelete key.Binding
	GotoCancel key.Binding
}

func newReplayKeys() replayKeys {
	return replayKeys{
		Back:     key.NewBinding(key.WithKeys("p", "left"), key.WithHelp("p/←", "back")),
		Forward:  key.NewBinding(key.WithKeys("right")),
		Goto:     key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "go to step")),
		ContBack: key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "back to break")),

		GotoGo:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go there")),
		GotoDelete: key.NewBinding(key.WithKeys("backspace"), key.WithHelp("backspace", "delete")),
		GotoCancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// replayHelp is the help bubble's KeyMap in a replay.
type replayHelp struct {
	k keyMap
	r replayKeys
}

// ShortHelp is the one-line help bar of a replay.
func (h replayHelp) ShortHelp() []key.Binding {
	return []key.Binding{h.k.Next, h.r.Back, h.r.Goto, h.k.Continue, h.r.ContBack, h.k.Break, h.k.Tab, h.k.Help, h.k.Quit, h.k.Timeline}
}

// Keep is a replay's help bar's keys, most needed first.
func (h replayHelp) Keep() []key.Binding {
	return []key.Binding{h.k.Help, h.k.Quit, h.k.Next, h.r.Back, h.r.Goto, h.k.Timeline, h.k.Continue, h.r.ContBack, h.k.Tab, h.k.Break}
}

// FullHelp is the help screen of a replay.
func (h replayHelp) FullHelp() [][]key.Binding {
	long := func(b key.Binding, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
	}
	return [][]key.Binding{
		{long(h.k.Next, "step forward"), long(h.r.Back, "step back"), long(h.r.Goto, "go to step N (0: start)"),
			long(h.k.Continue, "forward to breakpoint"), long(h.r.ContBack, "back to breakpoint")},
		{h.k.Up, h.k.Down, h.k.PgUp, h.k.PgDown},
		{long(h.k.Break, "toggle breakpoint"), long(h.k.Tab, "request/response/log"), long(h.k.Timeline, "timeline (toggle)"), h.k.Help, h.k.Quit},
	}
}

// confirmKeys answer the quit prompt ("tear the pod down?").
type confirmKeys struct {
	Yes    key.Binding
	All    key.Binding
	No     key.Binding
	Accept key.Binding
	Back   key.Binding
}

func newConfirmKeys() confirmKeys {
	return confirmKeys{
		Yes:    key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "tear down step by step")),
		All:    key.NewBinding(key.WithKeys("c", "C"), key.WithHelp("c", "tear down all at once")),
		No:     key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "keep the pod")),
		Accept: key.NewBinding(key.WithKeys("enter", "space"), key.WithHelp("enter", "the default")),
		Back:   key.NewBinding(key.WithKeys("esc", "q"), key.WithHelp("esc", "back")),
	}
}
