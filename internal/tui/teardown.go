package tui

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// teardownView is the pod pane's view of a pod being torn down, read from
// the teardown steps as they ran (in a run, and in a replay up to its
// position). The engine's pod status stops at creation: once the pod is
// deleted the API server's object is what kubectl shows, and podstate
// does not model it. kubectl prints STATUS Terminating for a pod with a
// deletion timestamp (printPod, pkg/printers/internalversion/printers.go),
// from the kubelet's first StopContainer to the object's removal.
type teardownView struct {
	// on: a teardown step has started (STATUS Terminating), the first
	// being first.
	on    bool
	first int
	// containers is each container's state text once the teardown
	// changed it ("stopping", "stopped", "removed"); ready its count
	// of ready containers then ("0/N" once stopped).
	containers map[string]string
	ready      string
	// by is the teardown step that last changed the view (highlighted
	// while it is the last step run).
	by int
}

// newTeardownView reads the teardown steps of all against pod.
func newTeardownView(pod podstate.Snapshot, all []steps.Step) teardownView {
	var v teardownView
	running := map[string]bool{}
	var names []string
	for _, c := range allStatuses(pod) {
		names = append(names, c.Name)
		if c.State.Running != nil {
			running[c.Name] = true
		}
	}
	set := func(id int, text string, only map[string]bool) {
		if v.containers == nil {
			v.containers = map[string]string{}
		}
		for _, n := range names {
			if only == nil || only[n] {
				v.containers[n] = text
			}
		}
		v.by = id
	}
	for _, s := range all {
		if s.Stage != steps.StageTeardown || s.State == steps.Pending || s.State == steps.Skipped {
			continue
		}
		if !v.on {
			v.on, v.first = true, s.ID
		}
		done := s.State == steps.Done
		switch s.Kind {
		case steps.KindStopContainers:
			if !done {
				set(s.ID, "stopping (StopContainer, its grace period)", running)
				continue
			}
			set(s.ID, "stopped by the teardown", running)
			v.ready = fmt.Sprintf("0/%d", len(pod.Status.ContainerStatuses))
		case steps.KindRemoveContainers:
			if done {
				set(s.ID, "removed (RemoveContainer)", nil)
			}
		}
	}
	return v
}

// apply is pod as the pod pane shows it during the teardown.
func (v teardownView) apply(pod podstate.Snapshot) podstate.Snapshot {
	if !v.on {
		return pod
	}
	pod.Display = "Terminating"
	if v.ready != "" {
		// Stopped containers are not ready: nor is the pod (the kubelet's
		// generateAPIPodStatus, pkg/kubelet/status/generate.go).
		pod.Ready = v.ready
		conds := make([]corev1.PodCondition, len(pod.Status.Conditions))
		copy(conds, pod.Status.Conditions)
		for i, c := range conds {
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				conds[i].Status = corev1.ConditionFalse
			}
		}
		pod.Status.Conditions = conds
	}
	return pod
}

// container is container c's state text during the teardown ("" before it
// changed it).
func (v teardownView) container(c corev1.ContainerStatus) string {
	return v.containers[c.Name]
}
