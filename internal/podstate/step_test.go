package podstate

import (
	"reflect"
	"testing"
)

// TestStepChangesIsDiff: in every scenario, with and without the pod's
// snapshot, StepChanges says after each step what Diff and NewEvents say
// of the snapshots before and after it, and the snapshot it returns is
// Snapshot's.
func TestStepChangesIsDiff(t *testing.T) {
	for _, sc := range scenarios() {
		want := sc.run()
		for _, pod := range []bool{false, true} {
			tr, clk := newTracker(sc.pod)
			tr.StepChanges(pod) // the mark: the pod before the first step
			for i, s := range sc.steps {
				clk.tick()
				s.do(tr)
				changes, events, snap := tr.StepChanges(pod)
				if w := Diff(want[i], want[i+1]); !reflect.DeepEqual(changes, w) {
					t.Errorf("%s, step %d (%s), pod %v: changes\n%v\nwant\n%v", sc.name, i+1, s.title, pod, changes, w)
				}
				if w := NewEvents(want[i], want[i+1]); !reflect.DeepEqual(events, w) {
					t.Errorf("%s, step %d (%s), pod %v: events\n%v\nwant\n%v", sc.name, i+1, s.title, pod, events, w)
				}
				if pod != (snap != nil) || snap != nil && !reflect.DeepEqual(*snap, want[i+1]) {
					t.Errorf("%s, step %d (%s): snapshot %+v\nwant %+v", sc.name, i+1, s.title, snap, want[i+1])
				}
			}
		}
	}
}
