package steps

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// Waiting: the running step begins a deliberate wait (a restart's
	// back-off); Wait says what for and how long. Between CallSent/CallDone
	// and StepDone; frontends that only print steps ignore it.
	Waiting EventKind = "waiting"
	// StepDone: a step finished (done or failed); Step is set, and Pod
	// (Step.Pod too) unless every subscriber subscribed without it
	// (SubscribeWithoutPod).
	StepDone EventKind = "step-done"
)

// Wait is a deliberate wait of the running step, as a Waiting event says it.
type Wait struct {
	// What waits ("back-off") and for which container.
	What      string
	Container string
	// Delay is the kubelet's (the back-off it is in); For how long podstep
	// waits from now: what is left of Delay, times Scale (--backoff-scale).
	Delay time.Duration
	For   time.Duration
	Scale float64
}

// Event is what the engine streams to frontends.
type Event struct {
	Kind   EventKind
	Step   Step
	Method string
	Call   *cri.Call
	Pod    *podstate.Snapshot
	// Wait is set on a Waiting event.
	Wait *Wait
}

// subscribers are the engine's event subscriptions.
type subscribers struct {
	mu sync.Mutex // guards list
	// list is replaced, never changed in place, so emit may range over
	// the one it read after unlocking.
	list []*subscriber
	// deliver is held while one event goes to every subscriber, so events
	// emitted from several goroutines at once (teardown stops containers in
	// parallel) reach every subscriber one at a time, in the same order.
	deliver sync.Mutex
}

type subscriber struct {
	fn        func(Event)
	noPod     bool // SubscribeWithoutPod
	cancelled atomic.Bool
}

// wantPod says whether a subscriber reads the pod's state after each step.
func (s *subscribers) wantPod() bool {
	s.mu.Lock()
	list := s.list
	s.mu.Unlock()
	for _, x := range list {
		if !x.noPod && !x.cancelled.Load() {
			return true
		}
	}
	return false
}

// Subscribe calls fn with every event the engine emits from now on, until
// cancel is called; cancel may be called more than once. Subscribe and
// cancel are safe from any goroutine, with any number of subscribers.
//
// Delivery is synchronous, as a frontend needs to print a step before the
// next one runs: fn is called on the goroutine that runs the engine (the
// caller of Next, Continue or Teardown, or one of teardown's parallel
// StopContainer calls), with one event at a time across all subscribers,
// so each subscriber gets every event in the order emitted. fn must return
// quickly, and must not call Next, Continue, Retry or Teardown; a frontend
// with slow work hands events to its own goroutine (the TUI puts them on a
// buffered channel). Once cancel returns fn is not called again, except
// for a call already under way on another goroutine.
func (e *Engine) Subscribe(fn func(Event)) (cancel func()) {
	return e.subscribe(&subscriber{fn: fn})
}

// SubscribeWithoutPod is Subscribe for a frontend that does not read the
// pod's state after each step (Event.Pod, Step.Pod), only what the step
// changed (Step.Changes, Step.Events): the --auto text printer. While
// every subscriber is one of these, StepDone events carry no Pod, and the
// engine makes no snapshot of the pod per step (a copy of every
// container's status: one per step made a run quadratic in the
// containers, issue 34).
func (e *Engine) SubscribeWithoutPod(fn func(Event)) (cancel func()) {
	return e.subscribe(&subscriber{fn: fn, noPod: true})
}

func (e *Engine) subscribe(s *subscriber) (cancel func()) {
	e.subs.mu.Lock()
	e.subs.list = append(slices.Clip(e.subs.list), s)
	e.subs.mu.Unlock()
	return func() {
		if s.cancelled.Swap(true) {
			return
		}
		e.subs.mu.Lock()
		e.subs.list = slices.DeleteFunc(slices.Clone(e.subs.list), func(x *subscriber) bool { return x == s })
		e.subs.mu.Unlock()
	}
}

// emit sends an event to every subscriber.
func (e *Engine) emit(ev Event) {
	e.subs.deliver.Lock()
	defer e.subs.deliver.Unlock()
	e.subs.mu.Lock()
	list := e.subs.list
	e.subs.mu.Unlock()
	for _, s := range list {
		if !s.cancelled.Load() {
			s.fn(ev)
		}
	}
}
