package watch

import (
	"google.golang.org/grpc/status"

	"github.com/podstep/podstep/internal/steps"
)

// Attribution is what the watcher decided about a call in flight: the pod,
// container, step and stage it belongs to, for a span's attributes.
type Attribution struct {
	// Namespace, Name and UID name the pod; empty for a node-level call.
	Namespace, Name, UID string
	// Container is the container the call is for, if one.
	Container string
	// Step and Stage are the podstep step the call went to ("" when it
	// was not shown: a relist that changed nothing is dropped later).
	Step  string
	Stage steps.Stage
}

// Attribution is the attribution of call seq, between the proxy's Arrived
// and Done hooks; ok is false for a call the watcher does not know. It
// waits for the calls queued so far to be handled (Hooks): tracing puts
// the watcher's work back on the call's path.
func (w *Watcher) Attribution(seq uint64) (a Attribution, ok bool) {
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	info := w.calls[seq]
	if info == nil {
		return a, false
	}
	if p := info.pod; p != nil {
		a.Namespace, a.Name, a.UID = p.Namespace, p.Name, p.UID
	}
	a.Container = info.container
	if o := info.step; o != nil {
		a.Step, a.Stage = o.step.Name, o.step.Stage
	}
	return a, true
}

// ErrorMessage is a call's error message as podstep shows it: secrets the
// watcher knows masked.
func (w *Watcher) ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	return status.Convert(w.red.Error(err)).Message()
}
