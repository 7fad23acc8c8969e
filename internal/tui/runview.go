package tui

import (
	"time"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// runView is what the panes read of the run, built by the root once per
// frame (model.view): a sub-model's view depends on it, its own state and
// the size it is given, and on nothing else of the root.
type runView struct {
	steps   []steps.Step
	pod     podstate.Snapshot
	podName string
	// last is what the last step changed; nextID the step Next would run
	// (0: none); ver is bumped whenever steps change (the step pane's cache key).
	last   lastChange
	nextID int
	ver    int
	// sel is the step the step pane shows (hasSel false: none).
	sel    steps.Step
	hasSel bool
	// running is the keypress's run under way, if any; spin the
	// spinner's frame.
	running running
	spin    string
	// failedID is the step the pod failed at (the engine's Failed: what r
	// retries; 0: none). A step shown failed that the kubelet recovers
	// from (a restart follows) is not it.
	failedID int
	// replay: the engine is a recording (no retry, no teardown).
	replay bool
	// down is the pod being torn down, from the teardown steps
	// (teardown.go); pod has its STATUS and READY already.
	down teardownView
	// lastID is the last step run (0: none).
	lastID int
}

// stepByID is step id of the run.
func (r runView) stepByID(id int) (s steps.Step, ok bool) {
	if id < 1 || id > len(r.steps) {
		return s, false
	}
	return r.steps[id-1], true
}

// since is when a running step began: its own start (during c, each
// step's, not the key's), or the key's before the engine said it started.
func (r runView) since(s steps.Step) time.Time {
	if !s.Started.IsZero() {
		return s.Started
	}
	return r.running.start
}

// view is the run as the panes read it now.
func (m *model) view() runView {
	rv := runView{steps: m.steps, pod: m.pod, podName: m.eng.Pod().Name, last: m.last, nextID: m.nextID, ver: m.ver,
		running: m.live.running, spin: m.live.spin.View(), replay: m.replay != nil}
	rv.sel, rv.hasSel = m.selected()
	rv.lastID = m.lastID
	rv.down = newTeardownView(rv.pod, rv.steps)
	rv.pod = rv.down.apply(rv.pod)
	if f := m.failedStep(); f != nil {
		rv.failedID = f.ID
	}
	return rv
}
