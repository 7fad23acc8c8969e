package tui

import "github.com/podstep/podstep/internal/steps"

// lastChange is what the last step changed, as the engine diffed it
// (steps.Step.Changes and Events): the pod and events panes highlight it.
// The TUI computes no diff of its own.
type lastChange struct {
	fields     map[string]bool // the Field of each change
	conditions map[string]bool // the conditions that flipped
	containers map[string]bool // the containers with a change ("init:" + name for init containers)
	// eventsFrom and eventsTo bound the step's events in the pod's events
	// (the tracker only appends, so they stay where they are).
	eventsFrom, eventsTo int
}

// newLastChange indexes the changes of step s, after which the pod had
// nEvents events.
func newLastChange(s steps.Step, nEvents int) lastChange {
	l := lastChange{eventsFrom: nEvents - len(s.Events), eventsTo: nEvents}
	if len(s.Changes) == 0 {
		return l
	}
	l.fields, l.conditions, l.containers = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range s.Changes {
		l.fields[c.Field] = true
		if typ := c.Condition(); typ != "" {
			l.conditions[typ] = true
		}
		if name, init := c.Container(); name != "" {
			l.containers[containerKey(name, init)] = true
		}
	}
	return l
}

func containerKey(name string, init bool) string {
	if init {
		return "init:" + name
	}
	return name
}

// field says whether the last step changed field (podstate.Field*).
func (l lastChange) field(f string) bool { return l.fields[f] }

// condition says whether the last step flipped condition typ.
func (l lastChange) condition(typ string) bool { return l.conditions[typ] }

// container says whether the last step changed a container's status.
func (l lastChange) container(name string, init bool) bool {
	return l.containers[containerKey(name, init)]
}

// event says whether the pod's i-th event was recorded by the last step.
func (l lastChange) event(i int) bool { return i >= l.eventsFrom && i < l.eventsTo }
