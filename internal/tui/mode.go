package tui

import "time"

// common is what the root model shares with its sub-models (the timeline,
// the replay): the window size, the styles, the key maps and the clock.
type common struct {
	width, height int
	st            styles
	keys          keyMap
	rkeys         replayKeys
	ckeys         confirmKeys
	now           func() time.Time
	// fmtDur formats step and call durations (tests mask them).
	fmtDur func(time.Duration) string
}

// uiMode is what the keys do now; it replaces the booleans the model had
// (confirm, showHelp, quitting). Each mode has its own key handler in
// key(): the precedence is the order of that switch and nothing else.
type uiMode int

const (
	// uiBrowse: the keys run, move and toggle (the usual mode).
	uiBrowse uiMode = iota
	// uiHelp: the help screen; any key closes it (q goes on to the quit prompt).
	uiHelp
	// uiConfirm: the quit prompt ("tear the pod down?").
	uiConfirm
	// uiGoto: a replay's g prompt (a step number).
	uiGoto
	// uiQuitting: the user chose; a running call is being cancelled, then
	// the program quits. The keys still browse.
	uiQuitting
)

// screen is what the body shows under the header and above the status line
// when the help screen is not up: t toggles it.
type screen int

const (
	screenPanes    screen = iota // plan | step, pod, events
	screenTimeline               // the waterfall (timeline.go)
)

// toggle is t: the other screen.
func (s screen) toggle() screen {
	if s == screenTimeline {
		return screenPanes
	}
	return screenTimeline
}
