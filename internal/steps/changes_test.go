package steps

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/podstep/podstep/internal/podstate"
)

// TestStepChanges: every step that ran carries what it changed and the
// events recorded while it ran, computed against the pod after the step
// before it (for the first step, the pod at New, not an empty one), so
// that the steps' events, one after the other, are the pod's events.
func TestStepChanges(t *testing.T) {
	cases := []struct {
		file string
		want []stepWant
	}{
		{"testdata/pods/hello.yaml", []stepWant{
			{"admit", podstate.Change{Field: "status.hostIP", To: "<any>"}, nil},
			{"pull/hello", podstate.Change{}, []string{"Pulled"}},
			{"create/hello", podstate.Change{}, []string{"Created"}},
			{"start/hello", podstate.Change{Field: "status", From: "ContainerCreating", To: "Running"}, []string{"Started"}},
			{"start/hello", podstate.Change{Field: "status.containerStatuses[hello].state", From: "waiting ContainerCreating", To: "running"}, nil},
			{"stop-containers", podstate.Change{}, []string{"Killing"}},
		}},
		{"testdata/pods/init.yaml", []stepWant{
			{"wait/setup", podstate.Change{Field: "status.conditions[Initialized].status", From: "False", To: "True"}, nil},
			// setup exited: only app is killed, as the kubelet kills running containers only.
			{"stop-containers", podstate.Change{}, []string{"Killing"}},
			{"wait/setup", podstate.Change{Field: "status.initContainerStatuses[setup].state", From: "running", To: "terminated Completed (exit 0)"}, nil},
		}},
		{"internal/scenario/data/crashloop.yaml", []stepWant{
			{"relist", podstate.Change{Field: "status", From: "Running", To: "Error"}, []string{}},
			{"relist", podstate.Change{Field: "status.containerStatuses[app].state", From: "running", To: "terminated Error (exit 2)"}, nil},
			{"create/app", podstate.Change{Field: "restarts", From: "0", To: "1"}, []string{"Created"}},
			{"backoff/app", podstate.Change{Field: "status", From: "Error", To: "CrashLoopBackOff"}, []string{"BackOff"}},
			// Nothing runs at the end: no Killing.
			{"stop-containers", podstate.Change{}, []string{}},
		}},
		{"internal/scenario/data/poststart-fails.yaml", []stepWant{
			{"post-start/app", podstate.Change{Field: "status", From: "Running", To: "PostStartHookError"}, []string{"FailedPostStartHook", "Killing"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			e := New(load(t, repoFile(tc.file)), newSim(t), testOptions(t))
			var done []Event
			e.Subscribe(func(ev Event) {
				if ev.Kind == StepDone {
					done = append(done, ev)
				}
			})
			prev := e.PodState()
			for !e.Finished() {
				if err := e.Continue(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}

			var all []podstate.Event
			byName := map[string][]Step{}
			for _, ev := range done {
				s := ev.Step
				if got, want := s.Changes, podstate.Diff(prev, *ev.Pod); !reflect.DeepEqual(got, want) {
					t.Errorf("step %d %s: Changes = %v, want %v", s.ID, s.Name, got, want)
				}
				if got, want := s.Events, podstate.NewEvents(prev, *ev.Pod); !reflect.DeepEqual(got, want) {
					t.Errorf("step %d %s: Events = %v, want %v", s.ID, s.Name, got, want)
				}
				// What Steps() returns later is the same.
				if got := e.Steps()[s.ID-1]; got.Name == s.Name && !reflect.DeepEqual(got.Changes, s.Changes) {
					t.Errorf("step %d %s: Steps() has Changes %v, the event %v", s.ID, s.Name, got.Changes, s.Changes)
				}
				for _, c := range s.Changes {
					if c.From == c.To {
						t.Errorf("step %d %s: no-change %v", s.ID, s.Name, c)
					}
				}
				all = append(all, s.Events...)
				byName[s.Name] = append(byName[s.Name], s)
				prev = *ev.Pod
			}
			if final := e.PodState().Events; !reflect.DeepEqual(all, final) {
				t.Errorf("the steps' events are not the pod's:\nsteps %v\npod   %v", all, final)
			}
			// The first step, admission, changes STATUS from Pending (the
			// phase: no container status before the kubelet's first sync)
			// and from nothing else: diffed against the pod at New, not an
			// empty pod.
			if first := done[0].Step; slices.ContainsFunc(first.Changes, func(c podstate.Change) bool { return c.Field == podstate.FieldStatus && c.From != "Pending" }) {
				t.Errorf("the first step %s changed STATUS (%v): diffed against an empty pod, not the pod at New", first.Name, first.Changes)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(byName[w.step], w.matches) {
					t.Errorf("no run of step %s has the change %v and the events %v", w.step, w.change, w.events)
				}
			}
		})
	}
}

// stepWant is something a step must report: a change (when Field is set)
// and the reasons of its events, in order (when events is not nil).
type stepWant struct {
	step   string
	change podstate.Change // To "<any>": any value but ""
	events []string
}

func (w stepWant) matches(s Step) bool {
	if w.change.Field != "" && !slices.ContainsFunc(s.Changes, func(c podstate.Change) bool {
		return c.Field == w.change.Field && c.From == w.change.From && (c.To == w.change.To || w.change.To == "<any>" && c.To != "")
	}) {
		return false
	}
	if w.events == nil {
		return true
	}
	var reasons []string
	for _, ev := range s.Events {
		reasons = append(reasons, ev.Reason)
	}
	return slices.Equal(reasons, w.events)
}

// TestRetryClearsChanges: the steps Retry makes pending again show no
// changes or events until they run again; run again, they report what
// they changed since the failed step.
func TestRetryClearsChanges(t *testing.T) {
	b := parse(t, fmt.Sprintf(faultPod, `sim.podstep.dev/start-error.app: "exec: sleep: not found"`, "docker.io/library/busybox:1.35", "IfNotPresent"))
	e := runAll(t, b, newSim(t), testOptions(t))
	f, failed := e.Failed()
	if !failed || f.Kind != KindStart || len(f.Events) == 0 {
		t.Fatalf("want a start failure with events, got %v %s %v", failed, f.Name, f.Events)
	}
	if err := e.Retry(); err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, s := range e.Steps() {
		if s.State != Pending {
			continue
		}
		pending++
		if s.Changes != nil || s.Events != nil {
			t.Errorf("pending step %d %s keeps Changes %v, Events %v", s.ID, s.Name, s.Changes, s.Events)
		}
	}
	if pending < 3 {
		t.Fatalf("Retry made %d steps pending, want pull, create and start", pending)
	}
	for range 2 { // pull and create again
		if _, err := e.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	create := e.Steps()[f.ID-2]
	want := podstate.Change{Field: "restarts", From: "0", To: "1"}
	if create.Kind != KindCreate || !slices.Contains(create.Changes, want) {
		t.Errorf("step %s after Retry: Changes %v, want %v among them", create.Name, create.Changes, want)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
