package podstate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/restart"
)

// Snapshot returns the pod's state now. Phase and conditions are derived
// here, as generateAPIPodStatus derives them on every sync; the STATUS,
// READY and RESTARTS columns are then read off that status as kubectl's
// printPod reads them.
func (t *Tracker) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshot()
}

// snapshot is Snapshot with t.mu held.
func (t *Tracker) snapshot() Snapshot {
	st := t.copyStatus()
	if !t.rejected {
		st.Phase = t.phase(&st)
		st.Conditions = t.conditions(&st, true)
	}
	// The events are shared, not copied: the Tracker only appends to its
	// list, so the snapshot's prefix (its capacity cut to its length) never
	// changes.
	s := Snapshot{Status: st, Events: t.events[:len(t.events):len(t.events)]}
	var ready, total int
	s.Display, ready, total, s.Restarts = t.printPod(&st)
	s.Ready = fmt.Sprintf("%d/%d", ready, total)
	return s
}

// copyStatus is the status to hand out, in one pass: its slices are new,
// but what their elements point to (states, the started flag) is shared,
// as the Tracker never changes a value it points to (every update sets a
// new one). A deep copy per snapshot, and a snapshot per step, made a run
// quadratic in the containers (issue 34). The status manager's
// normalizeStatus sorts the regular containers' statuses by name (init
// containers keep the spec's order); printPod depends on that order, in
// which the Tracker keeps them (New sorts them once). Must be called with
// t.mu held.
func (t *Tracker) copyStatus() corev1.PodStatus {
	st := t.status
	st.Conditions = nil
	st.HostIPs = slices.Clone(t.status.HostIPs)
	st.PodIPs = slices.Clone(t.status.PodIPs)
	st.InitContainerStatuses = slices.Clone(t.status.InitContainerStatuses)
	st.ContainerStatuses = slices.Clone(t.status.ContainerStatuses)
	if t.status.StartTime != nil {
		at := *t.status.StartTime
		st.StartTime = &at
	}
	return st
}

// initStatus is the status of the pod's i-th init container in st (nil if
// none): New made one per init container, in the spec's order.
func initStatus(st *corev1.PodStatus, spec *corev1.PodSpec, i int) *corev1.ContainerStatus {
	name := spec.InitContainers[i].Name
	if i < len(st.InitContainerStatuses) && st.InitContainerStatuses[i].Name == name {
		return &st.InitContainerStatuses[i]
	}
	return statusOf(st.InitContainerStatuses, name)
}

// regularStatus is the status of the pod's i-th container in st, a
// snapshot's status (sorted by name; nil if none).
func (t *Tracker) regularStatus(st *corev1.PodStatus, i int) *corev1.ContainerStatus {
	name := t.pod.Spec.Containers[i].Name
	if at := t.sortedAt[i]; at < len(st.ContainerStatuses) && st.ContainerStatuses[at].Name == name {
		return &st.ContainerStatuses[at]
	}
	return statusOf(st.ContainerStatuses, name)
}

// statusOf is the status of the container named name (nil if none).
func statusOf(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func restartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func isStarted(s *corev1.ContainerStatus) bool { return s.Started != nil && *s.Started }

// anyRegularStarted is the kubelet's HasAnyRegularContainerStarted
// (pkg/kubelet/container/helpers.go): a regular container is running or
// has terminated, so the pod was initialized once.
func (t *Tracker) anyRegularStarted(st *corev1.PodStatus) bool {
	for i := range t.pod.Spec.Containers {
		if s := t.regularStatus(st, i); s != nil && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// phase follows getPhase (pkg/kubelet/kubelet_pods.go, v1.37): a regular
// init container that has not succeeded keeps the pod Pending (Failed once
// one failed and is not restartable: with ContainerRestartRules, on by
// default, ContainerShouldRestart decides, else restartPolicy Never); a sidecar
// that is not started keeps it Pending until a regular container has run;
// a running sidecar counts as running; then Pending while any container
// waits to start, Running while any runs, and once all have stopped
// Succeeded/Failed/Running: Running while one of them is restartable
// (ContainerShouldRestart, internal/restart), else Succeeded when all
// exited 0 (without the gate: per the pod's restartPolicy).
func (t *Tracker) phase(st *corev1.PodStatus) corev1.PodPhase {
	spec := &t.pod.Spec
	pendingInit, failedInit, failedInitFinal, pendingSidecars := 0, 0, 0, 0
	var unknown, running, waiting, stopped, stoppedFinal, succeeded int
	rules := t.gates.Enabled(gate.ContainerRestartRules)
	// final: not restartable (ContainerShouldRestart), unless removed by
	// RestartAllContainers (getPhase: reason RestartingAllContainers).
	final := func(c *corev1.Container, code int32, why string) bool {
		if why == reason.RestartingAllContainers && t.gates.Enabled(gate.RestartAllContainersOnContainerExits) {
			return false
		}
		return !restart.Decide(c, spec, code, t.gates).Restart
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		s := initStatus(st, spec, i)
		if restartable(c) {
			switch {
			case s == nil:
				unknown++
			case s.State.Running != nil:
				if !isStarted(s) {
					pendingSidecars++
				}
				running++
			case s.State.Terminated != nil:
				// A stopped sidecar does not count for the phase.
			case s.State.Waiting != nil:
				if s.LastTerminationState.Terminated == nil {
					pendingSidecars++
					waiting++
				}
			default:
				pendingSidecars++
				unknown++
			}
			continue
		}
		switch {
		case s == nil, s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if code := s.State.Terminated.ExitCode; code != 0 {
				failedInit++
				if final(c, code, s.State.Terminated.Reason) {
					failedInitFinal++
				}
			}
		case s.State.Waiting != nil:
			if last := s.LastTerminationState.Terminated; last == nil {
				pendingInit++
			} else if last.ExitCode != 0 {
				failedInit++
				if final(c, last.ExitCode, last.Reason) {
					failedInitFinal++
				}
			}
		default:
			pendingInit++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		s := t.regularStatus(st, i)
		switch {
		case s == nil:
			unknown++
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if final(c, s.State.Terminated.ExitCode, s.State.Terminated.Reason) {
				stoppedFinal++
			}
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if last := s.LastTerminationState.Terminated; last != nil {
				stopped++
				if final(c, last.ExitCode, last.Reason) {
					stoppedFinal++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if rules && failedInitFinal > 0 || !rules && failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !t.anyRegularStarted(st)), waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if rules {
			switch {
			case stopped != stoppedFinal:
				return corev1.PodRunning // restarting
			case stopped == succeeded:
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch {
		case spec.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning // restarting
		case stopped == succeeded:
			return corev1.PodSucceeded
		case spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning // OnFailure: restarting the failed ones
	}
	return corev1.PodPending
}

// conditions are the kubelet-owned conditions in the order
// generateAPIPodStatus appends them: PodReadyToStartContainers (a sandbox
// with networking exists), Initialized, Ready, ContainersReady, then
// PodScheduled, which the kubelet always sets true. Must be called with
// t.mu held.
//
// Without msgs the conditions carry no messages (the lists of container
// names in them), so that a step's changes (StepChanges) cost no pass that
// allocates; their statuses, reasons and transition times are the same.
func (t *Tracker) conditions(st *corev1.PodStatus, msgs bool) []corev1.PodCondition {
	// Room for all six at once: Snapshot runs after every step of every pod.
	conds := make([]corev1.PodCondition, 0, 6)
	add := func(typ corev1.PodConditionType, ok bool, why, msg string) {
		conds = append(conds, t.cond(typ, ok, why, msg))
	}
	add(corev1.PodReadyToStartContainers, t.sandboxReady, "", "")

	// GeneratePodInitializedCondition: a regular init container counts once
	// it is ready (exited 0), a sidecar once it has started; a succeeded pod
	// and a pod where a regular container has run are initialized.
	var incomplete []string
	nIncomplete := 0
	for i := range t.pod.Spec.InitContainers {
		c := &t.pod.Spec.InitContainers[i]
		s := initStatus(st, &t.pod.Spec, i)
		if s == nil || restartable(c) && !isStarted(s) || !restartable(c) && !s.Ready {
			// s == nil cannot happen: New makes every status.
			nIncomplete++
			if msgs {
				incomplete = append(incomplete, c.Name)
			}
		}
	}
	switch {
	case st.Phase == corev1.PodSucceeded:
		add(corev1.PodInitialized, true, reason.PodCompleted, "")
	case t.anyRegularStarted(st) || nIncomplete == 0:
		add(corev1.PodInitialized, true, "", "")
	case t.gates.Enabled(gate.RestartAllContainersOnContainerExits) && t.transitions[corev1.PodInitialized].status == corev1.ConditionTrue:
		// An in-place restart (RestartAllContainers) takes the init
		// containers back to waiting, but a pod once initialized stays so.
		add(corev1.PodInitialized, true, "", "")
	default:
		msg := ""
		if msgs {
			msg = fmt.Sprintf("containers with incomplete status: %s", incomplete)
		}
		add(corev1.PodInitialized, false, reason.ContainersNotInitialized, msg)
	}

	// GenerateContainersReadyCondition, which GeneratePodReadyCondition
	// copies while it is not true (podstep has no readiness gates): sidecars
	// and regular containers must all be ready; a terminal pod is not ready.
	var unready []string
	nUnready := 0
	for i := range t.pod.Spec.InitContainers {
		c := &t.pod.Spec.InitContainers[i]
		if s := initStatus(st, &t.pod.Spec, i); restartable(c) && (s == nil || !s.Ready) {
			nUnready++
			if msgs {
				unready = append(unready, c.Name)
			}
		}
	}
	for i := range t.pod.Spec.Containers {
		if s := t.regularStatus(st, i); s == nil || !s.Ready {
			nUnready++
			if msgs {
				unready = append(unready, t.pod.Spec.Containers[i].Name)
			}
		}
	}
	ready, why, msg := true, "", ""
	if nUnready > 0 {
		ready, why = false, reason.ContainersNotReady
		if msgs {
			msg = fmt.Sprintf("containers with unready status: %s", unready)
		}
	}
	switch st.Phase {
	case corev1.PodSucceeded:
		ready, why, msg = false, reason.PodCompleted, ""
	case corev1.PodFailed:
		ready, why, msg = false, reason.PodFailed, ""
	}
	add(corev1.PodReady, ready, why, msg)
	add(corev1.ContainersReady, ready, why, msg)
	add(corev1.PodScheduled, true, "", "")
	// GenerateAllContainersRestartingCondition, added only when some
	// container has a RestartAllContainers rule (AllContainersCouldRestart).
	if t.anyRestartAll {
		c := t.cond(corev1.AllContainersRestarting, t.restartingAll, "", "")
		if t.restartingAll {
			c.Reason, c.Message = reason.RestartAllContainersStarted, "container exited with restart policy rule"
		}
		conds = append(conds, c)
	}
	return conds
}

// cond builds one condition and keeps its last transition time stable while
// its status does not change, as the status manager's
// updateLastTransitionTime does. A false condition carries reason and msg;
// a true one carries reason only (Initialized of a succeeded pod is
// PodCompleted). Must be called with t.mu held.
func (t *Tracker) cond(typ corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
		msg = ""
	}
	prev, seen := t.transitions[typ]
	if !seen || prev.status != status {
		prev = condState{status: status, at: metav1.NewTime(t.now())}
		t.transitions[typ] = prev
	}
	return corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: prev.at, Reason: reason, Message: msg}
}

// printPod is the pod's columns as kubectl prints them (printPod below):
// before the node admits the pod (NotAdmitted) the kubelet has written no
// container status, and STATUS is the phase. t.mu is held.
func (t *Tracker) printPod(st *corev1.PodStatus) (shown string, ready, total int, restarts int32) {
	if t.unadmitted {
		bare := *st
		bare.InitContainerStatuses, bare.ContainerStatuses = nil, nil
		return printPod(t.pod, &bare)
	}
	return printPod(t.pod, st)
}

// printPod computes the STATUS, READY and RESTARTS columns of
// `kubectl get pod` as printPod does (pkg/printers/internalversion/printers.go,
// the server-side table printer kubectl shows):
//
//   - STATUS is the pod's reason, else its phase; the first init container
//     that has neither exited 0 nor (as a sidecar) started makes it
//     Init:<reason>, Init:ExitCode:N, Init:Signal:N or Init:i/N; once the
//     pod is initialized, the first container (in status order) that waits
//     or terminated with a reason gives it; Completed beside a running and
//     ready container is Running if the pod is Ready, else NotReady.
//   - READY counts ready running containers and started ready sidecars, out
//     of the containers plus the sidecars.
//   - RESTARTS sums the init containers' restarts while the pod initializes,
//     then the sidecars' and the containers'.
func printPod(pod *corev1.Pod, st *corev1.PodStatus) (shown string, ready, total int, restarts int32) {
	shown = string(st.Phase)
	if st.Reason != "" {
		shown = st.Reason
	}
	total = len(pod.Spec.Containers)
	for i := range pod.Spec.InitContainers {
		if restartable(&pod.Spec.InitContainers[i]) {
			total++
		}
	}
	var sidecarRestarts int32
	initializing := false
	for i := range st.InitContainerStatuses {
		c := &st.InitContainerStatuses[i]
		restarts += c.RestartCount
		spec := initSpec(pod, i, c.Name)
		sidecar := spec != nil && restartable(spec)
		if sidecar {
			sidecarRestarts += c.RestartCount
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar && isStarted(c):
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				shown = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				shown = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				shown = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != reason.PodInitializing:
			shown = "Init:" + c.State.Waiting.Reason
		default:
			shown = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || conditionTrue(st, corev1.PodInitialized) {
		restarts = sidecarRestarts
		hasRunning := false
		for i := len(st.ContainerStatuses) - 1; i >= 0; i-- {
			c := &st.ContainerStatuses[i]
			restarts += c.RestartCount
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				shown = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				shown = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				shown = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				shown = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if shown == reason.Completed && hasRunning {
			shown = reason.NotReady
			if conditionTrue(st, corev1.PodReady) {
				shown = string(corev1.PodRunning)
			}
		}
	}
	return shown, ready, total, restarts
}

// initSpec is the init container named name, looked up at index i first
// (statuses follow the spec's order); nil if none.
func initSpec(pod *corev1.Pod, i int, name string) *corev1.Container {
	if i < len(pod.Spec.InitContainers) && pod.Spec.InitContainers[i].Name == name {
		return &pod.Spec.InitContainers[i]
	}
	for j := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[j].Name == name {
			return &pod.Spec.InitContainers[j]
		}
	}
	return nil
}

func conditionTrue(st *corev1.PodStatus, typ corev1.PodConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
