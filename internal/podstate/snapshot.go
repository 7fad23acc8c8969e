package podstate

import (
	"fmt"
	"sort"

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
	st := *t.status.DeepCopy()
	// The status manager's normalizeStatus sorts the regular containers'
	// statuses by name (init containers keep the spec's order); printPod
	// depends on that order.
	sort.SliceStable(st.ContainerStatuses, func(i, j int) bool {
		return st.ContainerStatuses[i].Name < st.ContainerStatuses[j].Name
	})
	if !t.rejected {
		st.Phase = t.phase(&st)
		st.Conditions = t.conditions(&st)
	}
	s := Snapshot{Status: st, Events: append([]Event(nil), t.events...)}
	var ready, total int
	s.Display, ready, total, s.Restarts = printPod(t.pod, &st)
	s.Ready = fmt.Sprintf("%d/%d", ready, total)
	return s
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
	for _, c := range t.pod.Spec.Containers {
		if s := statusOf(st.ContainerStatuses, c.Name); s != nil && (s.State.Running != nil || s.State.Terminated != nil) {
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
		s := statusOf(st.InitContainerStatuses, c.Name)
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
		s := statusOf(st.ContainerStatuses, c.Name)
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
func (t *Tracker) conditions(st *corev1.PodStatus) []corev1.PodCondition {
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
	for i := range t.pod.Spec.InitContainers {
		c := &t.pod.Spec.InitContainers[i]
		s := statusOf(st.InitContainerStatuses, c.Name)
		if s == nil {
			incomplete = append(incomplete, c.Name) // cannot happen: New makes every status
			continue
		}
		if restartable(c) && !isStarted(s) || !restartable(c) && !s.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	switch {
	case st.Phase == corev1.PodSucceeded:
		add(corev1.PodInitialized, true, reason.PodCompleted, "")
	case t.anyRegularStarted(st) || len(incomplete) == 0:
		add(corev1.PodInitialized, true, "", "")
	case t.gates.Enabled(gate.RestartAllContainersOnContainerExits) && t.transitions[corev1.PodInitialized].status == corev1.ConditionTrue:
		// An in-place restart (RestartAllContainers) takes the init
		// containers back to waiting, but a pod once initialized stays so.
		add(corev1.PodInitialized, true, "", "")
	default:
		add(corev1.PodInitialized, false, reason.ContainersNotInitialized, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}

	// GenerateContainersReadyCondition, which GeneratePodReadyCondition
	// copies while it is not true (podstep has no readiness gates): sidecars
	// and regular containers must all be ready; a terminal pod is not ready.
	var unready []string
	for i := range t.pod.Spec.InitContainers {
		c := &t.pod.Spec.InitContainers[i]
		if s := statusOf(st.InitContainerStatuses, c.Name); restartable(c) && (s == nil || !s.Ready) {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range t.pod.Spec.Containers {
		if s := statusOf(st.ContainerStatuses, c.Name); s == nil || !s.Ready {
			unready = append(unready, c.Name)
		}
	}
	ready, why, msg := true, "", ""
	if len(unready) > 0 {
		ready, why, msg = false, reason.ContainersNotReady, fmt.Sprintf("containers with unready status: %s", unready)
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
	if restart.AnyRestartAll(&t.pod.Spec, t.gates) {
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
	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		inits[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if restartable(&pod.Spec.InitContainers[i]) {
			total++
		}
	}
	var sidecarRestarts int32
	initializing := false
	for i := range st.InitContainerStatuses {
		c := &st.InitContainerStatuses[i]
		restarts += c.RestartCount
		sidecar := inits[c.Name] != nil && restartable(inits[c.Name])
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

func conditionTrue(st *corev1.PodStatus, typ corev1.PodConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
