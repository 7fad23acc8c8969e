package bench

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/steps"
)

// Pod is what one pod's run measured.
type Pod struct {
	// Name and UID are the pod's (each run of the manifest gets its own).
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Phases is the time of each phase the pod went through, in ms.
	Phases map[string]float64 `json:"phases_ms"`
	// Calls are the pod's CRI calls: method and time, in the order sent.
	Calls []Call `json:"-"`
	// WallMs is the pod's creation plus its teardown, wall clock.
	WallMs float64 `json:"wall_ms"`
	// CRIMs is the time spent in CRI calls (the CRI floor), WaitMs the
	// time spent waiting on purpose (polls, probes, back-off), OwnMs the
	// rest: podstep's own time.
	CRIMs  float64 `json:"cri_ms"`
	WaitMs float64 `json:"wait_ms"`
	OwnMs  float64 `json:"own_ms"`
	// OwnSteps is podstep's own time in the steps of each kind (named as
	// the steps are: dirs, create, remove-dirs…): the steps' time less
	// their CRI calls, of the steps that do not wait on purpose. OwnMs
	// less their sum is the time between steps.
	OwnSteps map[string]float64 `json:"own_steps_ms"`
	// Started says whether every container was seen running (the end of
	// the startup SLIs); TotalMs and SLIMs are set only then.
	Started bool    `json:"started"`
	TotalMs float64 `json:"pod_start_total_ms,omitempty"`
	// SLIMs is TotalMs less image pulling and init container run time;
	// not set for a stateful pod, which the kubelet leaves out.
	SLIMs float64 `json:"pod_start_sli_ms,omitempty"`
	// Stateful says the pod mounts a volume other than secret, configMap,
	// downwardAPI, emptyDir or projected.
	Stateful bool `json:"stateful,omitempty"`
	// Failed is "stage/step: reason: message" when a step failed.
	Failed string `json:"failed,omitempty"`
	// Interrupted says the run was cut short (Ctrl-C): Build leaves the
	// pod out.
	Interrupted bool `json:"-"`
}

// Call is one CRI call's method and duration.
type Call struct {
	Method string
	Ms     float64
}

// Measure reads one pod's run from its steps (creation and teardown, as
// eng.Steps() has them after Teardown). created and teardown are the wall
// times of the creation and the teardown.
func Measure(pod *corev1.Pod, all []steps.Step, created, teardown time.Duration) Pod {
	p := Pod{Name: pod.Name, UID: string(pod.UID), Phases: map[string]float64{}, OwnSteps: map[string]float64{}, Stateful: isStatefulPod(pod)}
	var cri, wait time.Duration
	for _, s := range all {
		if s.State == steps.Pending || s.State == steps.Skipped {
			continue
		}
		ph := PhaseOf(s.Kind)
		p.Phases[ph] = round(p.Phases[ph] + ms(int64(s.Duration)))
		var in time.Duration
		for _, c := range s.Calls {
			in += c.Duration
			p.Calls = append(p.Calls, Call{Method: c.Method, Ms: ms(int64(c.Duration))})
		}
		rt, w, own := s.Kind.Split(s.Duration, in)
		cri, wait = cri+rt, wait+w
		if !s.Kind.Waits() {
			k := s.Kind.String()
			p.OwnSteps[k] = round(p.OwnSteps[k] + ms(int64(own)))
		}
		if s.State == steps.Failed && p.Failed == "" && s.Stage != steps.StageTeardown {
			p.Failed = string(s.Stage) + "/" + s.Name + ": " + s.Result.Reason + ": " + s.Result.Message
		}
	}
	wall := created + teardown
	p.WallMs, p.CRIMs, p.WaitMs = ms(int64(wall)), ms(int64(cri)), ms(int64(wait))
	p.OwnMs = ms(int64(wall - cri - wait))
	if total, sli, ok := startupSLI(pod, all); ok {
		p.Started = true
		p.TotalMs = ms(int64(total))
		if !p.Stateful {
			p.SLIMs = ms(int64(sli))
		}
	}
	return p
}

// startupSLI computes the kubelet's two pod-startup figures for one run,
// as pkg/kubelet/util/pod_startup_latency_tracker.go does:
//
//   - pod_start_total_duration_seconds: from the pod's creation to when
//     it is observed with every container running (hasPodStartedSLO:
//     each status in containerStatuses is Running with a StartedAt).
//     podstep has no API server: the pod is created, and seen by the
//     kubelet, when its admit step starts; it is observed running when
//     the first step after which hasPodStartedSLO holds ends (podstep
//     updates the status in that step; the kubelet's status manager
//     and the watch add their own delay on a node).
//   - pod_start_sli_duration_seconds: the same less the time spent
//     pulling images (RecordImageStartedPulling/FinishedPulling around
//     each successful pull in images/image_manager.go: here each
//     successful PullImage call; overlapping pulls counted once) and less
//     the time init containers ran (RecordInitContainerStarted after a
//     non-sidecar init container's start, RecordInitContainerFinished
//     with its FinishedAt, in kuberuntime_manager.go: here from the end
//     of its start step to its FinishedAt).
func startupSLI(pod *corev1.Pod, all []steps.Step) (total, sli time.Duration, ok bool) {
	var created, observed time.Time
	for _, s := range all {
		if s.Kind == steps.KindAdmit {
			created = s.Started
		}
		if s.Stage == steps.StageTeardown || s.Pod == nil || created.IsZero() {
			continue
		}
		if hasPodStartedSLO(s.Pod.Status) {
			observed = s.Started.Add(s.Duration)
			break
		}
	}
	if created.IsZero() || observed.IsZero() {
		return 0, 0, false
	}
	total = observed.Sub(created)
	sli = total - pullTime(all, observed) - initRunTime(pod, all, observed)
	return total, sli, true
}

// hasPodStartedSLO mirrors the kubelet's: every container has started.
func hasPodStartedSLO(st corev1.PodStatus) bool {
	if len(st.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// pullTime adds up successful PullImage calls before end, overlapping
// ones once (calculateImagePullingTime).
func pullTime(all []steps.Step, end time.Time) time.Duration {
	var total time.Duration
	var until time.Time
	for _, s := range all {
		for _, c := range s.Calls {
			if c.Method != "PullImage" || c.Err != nil || c.Start.After(end) {
				continue
			}
			from, to := c.Start, c.Start.Add(c.Duration)
			switch {
			case until.IsZero() || from.After(until):
				total += to.Sub(from)
				until = to
			case to.After(until):
				total += to.Sub(until)
				until = to
			}
		}
	}
	return total
}

// initRunTime adds up how long the non-sidecar init containers ran.
func initRunTime(pod *corev1.Pod, all []steps.Step, end time.Time) time.Duration {
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecar[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	var total time.Duration
	for i, s := range all {
		if s.Kind != steps.KindStart || s.Stage != steps.StageInit || sidecar[s.Container] || s.State != steps.Done {
			continue
		}
		started := s.Started.Add(s.Duration)
		if finished, ok := initFinished(all[i:], s.Container, end); ok && finished.After(started) {
			total += finished.Sub(started)
		}
	}
	return total
}

// initFinished is when the init container was first seen terminated.
func initFinished(rest []steps.Step, name string, end time.Time) (time.Time, bool) {
	for _, s := range rest {
		if s.Pod == nil || s.Started.After(end) {
			continue
		}
		for _, cs := range s.Pod.Status.InitContainerStatuses {
			if cs.Name == name && cs.State.Terminated != nil && !cs.State.Terminated.FinishedAt.IsZero() {
				return cs.State.Terminated.FinishedAt.Time, true
			}
		}
	}
	return time.Time{}, false
}

// isStatefulPod mirrors the kubelet's: a pod that mounts a volume other
// than secret, configMap, downwardAPI, emptyDir or projected is left out
// of pod_start_sli_duration_seconds.
func isStatefulPod(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Projected == nil {
			return true
		}
	}
	return false
}
