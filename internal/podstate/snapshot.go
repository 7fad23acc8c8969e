package podstate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Snapshot returns the pod's state now. Phase and conditions are derived
// here, as generateAPIPodStatus derives them on every sync.
func (t *Tracker) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := *t.status.DeepCopy()
	if st.Phase != corev1.PodFailed || st.Reason == "" {
		st.Phase = t.phase(&st)
	}
	st.Conditions = t.conditions(&st)
	s := Snapshot{Status: st, Events: append([]Event(nil), t.events...)}
	s.Display = display(&st, len(t.pod.Spec.InitContainers))
	// READY counts the spec's containers (and sidecars), as kubectl does,
	// even when a rejected pod has no statuses.
	ready, total := 0, len(t.pod.Spec.Containers)
	for _, c := range st.ContainerStatuses {
		if c.Ready {
			ready++
		}
		s.Restarts += c.RestartCount
	}
	for _, c := range st.InitContainerStatuses {
		s.Restarts += c.RestartCount
		if isSidecar(t.pod, c.Name) && c.Ready {
			ready++
		}
	}
	for _, c := range t.pod.Spec.InitContainers {
		if isSidecar(t.pod, c.Name) {
			total++
		}
	}
	s.Ready = fmt.Sprintf("%d/%d", ready, total)
	return s
}

// phase mirrors getPhase (pkg/kubelet/kubelet_pods.go): Pending until every
// init container succeeded and every container started; Running while any
// runs; Succeeded/Failed when all terminated, per restartPolicy.
func (t *Tracker) phase(st *corev1.PodStatus) corev1.PodPhase {
	for _, s := range st.InitContainerStatuses {
		if isSidecar(t.pod, s.Name) {
			if s.State.Running == nil {
				return corev1.PodPending
			}
			continue
		}
		if term := s.State.Terminated; term != nil && term.ExitCode == 0 {
			continue
		}
		if term := s.State.Terminated; term != nil && t.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, s := range st.ContainerStatuses {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		default:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0 && stopped == len(st.ContainerStatuses):
		if t.pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if succeeded == stopped {
			return corev1.PodSucceeded
		}
		if t.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// conditions mirrors the kubelet's status package: PodReadyToStartContainers
// (sandbox with networking), Initialized, ContainersReady, Ready, and
// PodScheduled, which generateAPIPodStatus always sets true.
func (t *Tracker) conditions(st *corev1.PodStatus) []corev1.PodCondition {
	initialized := true
	for _, s := range st.InitContainerStatuses {
		if isSidecar(t.pod, s.Name) {
			if s.State.Running == nil {
				initialized = false
			}
			continue
		}
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			initialized = false
		}
	}
	ready := len(st.ContainerStatuses) > 0
	for _, s := range st.ContainerStatuses {
		if !s.Ready {
			ready = false
		}
	}
	var notReady []string
	for _, s := range st.ContainerStatuses {
		if !s.Ready {
			notReady = append(notReady, s.Name)
		}
	}
	conds := []corev1.PodCondition{
		t.cond(corev1.PodReadyToStartContainers, t.sandboxReady, "", ""),
		t.cond(corev1.PodInitialized, initialized, "ContainersNotInitialized", "containers with incomplete status: "+fmt.Sprint(incompleteInit(t.pod, st))),
		t.cond(corev1.ContainersReady, ready, "ContainersNotReady", "containers with unready status: "+fmt.Sprint(notReady)),
		t.cond(corev1.PodReady, ready, "ContainersNotReady", "containers with unready status: "+fmt.Sprint(notReady)),
		t.cond(corev1.PodScheduled, true, "", ""),
	}
	return conds
}

func incompleteInit(pod *corev1.Pod, st *corev1.PodStatus) []string {
	var out []string
	for _, s := range st.InitContainerStatuses {
		if isSidecar(pod, s.Name) {
			if s.State.Running == nil {
				out = append(out, s.Name)
			}
			continue
		}
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			out = append(out, s.Name)
		}
	}
	return out
}

// cond builds one condition and keeps its last transition time stable while
// its status does not change. Must be called with t.mu held.
func (t *Tracker) cond(typ corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
		reason, msg = "", ""
	}
	prev, seen := t.transitions[typ]
	if !seen || prev.status != status {
		prev = condState{status: status, at: metav1.NewTime(t.now())}
		t.transitions[typ] = prev
	}
	return corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: prev.at, Reason: reason, Message: msg}
}

// display computes the STATUS column as kubectl's printPod does
// (k8s.io/kubectl/pkg/cmd/get / pkg/printers/internalversion/printers.go).
func display(st *corev1.PodStatus, nInit int) string {
	reason := string(st.Phase)
	if st.Reason != "" {
		reason = st.Reason
	}
	initializing := false
	for i, c := range st.InitContainerStatuses {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case c.State.Running != nil && c.Started != nil && *c.Started && c.Ready:
			// A started sidecar does not block initialization.
			continue
		case c.State.Terminated != nil:
			if c.State.Terminated.Reason == "" {
				if c.State.Terminated.Signal != 0 {
					reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
				} else {
					reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
				}
			} else {
				reason = "Init:" + c.State.Terminated.Reason
			}
			initializing = true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, nInit)
			initializing = true
		}
		break
	}
	if !initializing {
		hasRunning := false
		for i := len(st.ContainerStatuses) - 1; i >= 0; i-- {
			c := st.ContainerStatuses[i]
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.State.Running != nil && c.Ready:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			reason = string(corev1.PodRunning)
		}
		if hasRunning && allRunning(st) {
			reason = string(corev1.PodRunning)
		}
	}
	return reason
}

func allRunning(st *corev1.PodStatus) bool {
	for _, c := range st.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}
