package podstate

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// StepChanges says what changed in the pod since its last call (for the
// first call, since New): Diff and NewEvents of a snapshot then and one
// now, without the snapshots. A step of the engine changes a container or
// two, so diffing two snapshots of a whole pod per step (a copy of every
// container's status each) made a run quadratic in its containers (issue
// 34); here a step costs what it changed, plus one pass over the
// containers that allocates nothing (the phase, conditions and columns are
// derived from all of them). The events returned are the Tracker's own
// list, read-only.
//
// With pod, it also returns the snapshot now (Snapshot), for frontends
// that show the pod after each step; it costs a copy of the pod's status.
// Snapshot and StepChanges may be called in any order: only StepChanges
// moves the mark.
func (t *Tracker) StepChanges(pod bool) ([]Change, []Event, *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var snap *Snapshot
	var next Snapshot
	if pod {
		s := t.snapshot()
		snap, next = &s, s
	} else {
		next = t.columns()
	}
	out := diffPod(nil, &t.mark, &next)
	slices.Sort(t.touched)
	nInit := len(t.pod.Spec.InitContainers)
	for _, key := range t.touched {
		prev := t.before[key]
		prefix, list, i := initPrefix, t.status.InitContainerStatuses, key
		if key >= nInit {
			prefix, list, i = regularPrefix, t.status.ContainerStatuses, key-nInit
		}
		now := &zeroStatus
		if i < len(list) {
			now = &list[i]
		}
		out = diffContainer(out, prefix, prev.Name, &prev, now)
	}
	clear(t.before)
	t.touched = t.touched[:0]
	var events []Event
	if n := len(t.events); n > t.markEvents {
		events = t.events[t.markEvents:n:n]
	}
	t.markEvents = len(t.events)
	// The mark keeps the pod-level fields only: no container statuses,
	// no messages.
	t.mark = Snapshot{Display: next.Display, Ready: next.Ready, Restarts: next.Restarts, Status: corev1.PodStatus{
		Phase: next.Status.Phase, Reason: next.Status.Reason, HostIP: next.Status.HostIP, PodIP: next.Status.PodIP,
		Conditions: next.Status.Conditions}}
	return out, events, snap
}

// columns is what Diff reads of the pod besides its containers, as
// Snapshot derives it, without copying the statuses or writing the
// conditions' messages. t.mu is held.
func (t *Tracker) columns() Snapshot {
	st := t.status // shares the slices: read only below
	if !t.rejected {
		st.Phase = t.phase(&st)
		st.Conditions = t.conditions(&st, false)
	}
	shown, ready, total, restarts := t.printPod(&st)
	return Snapshot{Display: shown, Ready: strconv.Itoa(ready) + "/" + strconv.Itoa(total), Restarts: restarts,
		Status: corev1.PodStatus{Phase: st.Phase, Reason: st.Reason, HostIP: st.HostIP, PodIP: st.PodIP, Conditions: st.Conditions}}
}
