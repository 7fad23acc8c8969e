package steps

import (
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
)

// EventKind says what an Event reports.
type EventKind string

// Event kinds, in the order a step produces them.
const (
	// StepStarted: a step began; Step is its state.
	StepStarted EventKind = "step-started"
	// CallSent: a CRI request went out; Method names it.
	CallSent EventKind = "call-sent"
	// CallDone: a CRI call returned; Call holds it.
	CallDone EventKind = "call-done"
	// StepDone: a step finished (done or failed); Step and Pod are set.
	StepDone EventKind = "step-done"
)

// Event is what the engine streams to frontends.
type Event struct {
	Kind   EventKind
	Step   Step
	Method string
	Call   *cri.Call
	Pod    *podstate.Snapshot
}
