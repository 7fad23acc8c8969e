package tui

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// Engine is what the TUI needs of the engine it drives. A live
// *steps.Engine is one; a recording played back through the same methods
// can be another, and the TUI would not know the difference.
type Engine interface {
	// Pod is the pod being created.
	Pod() *corev1.Pod
	// Steps is the plan with each step's state; NextStep the step Next
	// would run; Failed the step the pod failed at, if any.
	Steps() []steps.Step
	NextStep() (steps.Step, bool)
	Failed() (steps.Step, bool)
	// PodState is the pod's status now.
	PodState() podstate.Snapshot
	// Next runs one step, Continue up to a breakpoint or the end, Retry
	// makes the failed step pending again.
	Next(ctx context.Context) (steps.Step, error)
	Continue(ctx context.Context) error
	Retry() error
	// ToggleBreakStage and ToggleBreakStep set or clear a breakpoint and
	// say whether it is now set.
	ToggleBreakStage(st steps.Stage) bool
	ToggleBreakStep(id int) bool
	// ContainerLog is the end of a container's log, masked
	// (steps.ErrNoContainer before it was created).
	ContainerLog(name string, max int) ([]steps.LogLine, error)
	// Subscribe delivers every event from now on until cancel, in order,
	// on the goroutine running the engine: fn must not block.
	Subscribe(fn func(steps.Event)) (cancel func())
}

var _ Engine = (*steps.Engine)(nil)

// subscribe puts the engine's events on m.events for the program to read
// (waitEvent). It never blocks the engine: when the program falls behind,
// events are dropped, and the program re-reads the engine once the run ends.
func (m *model) subscribe() {
	ch := m.events
	if _, ok := m.eng.(Replayer); ok {
		// A replay moves between positions itself (replay.go).
		m.unsubscribe = func() {}
		return
	}
	m.unsubscribe = m.eng.Subscribe(func(ev steps.Event) {
		select {
		case ch <- engineEventMsg{ev}:
		default:
		}
	})
}
