package steps

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/restart"
)

// waitInitStep mirrors how the kubelet notices an init container finished:
// the PLEG relists containers (GenericPLEG.Relist, pkg/kubelet/pleg/generic.go,
// once a second), the pod worker syncs again, and computePodActions moves to
// the next init container only when this one exited 0.
type waitInitStep struct{ name string }

func (waitInitStep) mirrors() string {
	return "GenericPLEG.Relist (pkg/kubelet/pleg/generic.go) → computePodActions / findNextInitContainerToRun (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (waitInitStep) explain() string {
	return "Init containers run one at a time, to completion. The kubelet learns that one changed state from its PLEG, which relists the containers once a second (podstep relists more often) and, for each change, reads the pod's status again (PodSandboxStatus, ContainerStatus). Exit code 0 lets the next init container start; any other exit fails the pod (restartPolicy Never) or restarts the init container with back-off."
}

func (s waitInitStep) requests(e *Engine) []Request {
	id := e.rt.containers[s.name].id
	if id == "" {
		id = "<container id from CreateContainer>"
	}
	reqs := []Request{
		{Method: "ListPodSandbox", Message: &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: e.podFilter().LabelSelector}},
			Note: "first, the relist SyncPod asks for: the pod's sandboxes, then its containers and the status of each"},
		{Method: "ListContainers", Message: &runtimeapi.ListContainersRequest{Filter: e.podFilter()}, Note: "then every " + e.opts.PollInterval.String()},
		{Method: "PodSandboxStatus", Message: &runtimeapi.PodSandboxStatusRequest{PodSandboxId: e.placeholderSandbox()}},
		{Method: "ContainerStatus", Message: &runtimeapi.ContainerStatusRequest{ContainerId: id}},
	}
	if c := e.rt.containers[s.name]; !isSidecar(c.spec) && !restart.Restartable(c.spec, &e.pod.Spec, e.opts.Config.Gates) {
		reqs = append(reqs, e.terminalStopRequest("if it exits non-zero (not restartable: the pod is Failed)"))
	}
	return reqs
}

// podFilter selects the pod's containers by the kubelet's pod UID label.
func (e *Engine) podFilter() *runtimeapi.ContainerFilter {
	return &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(e.pod.UID)}}
}

func (s waitInitStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	ctx, cancel := context.WithTimeout(ctx, e.opts.InitTimeout)
	defer cancel()
	tick := time.NewTicker(e.opts.PollInterval)
	defer tick.Stop()
	// The first relist is the one SyncPod asks for once it started the
	// container (podRelist); the later ones are the PLEG's periodic relist.
	relists := 1
	statuses, err := e.podRelist(ctx)
	if err != nil {
		return fail(reason.Error, err, err.Error())
	}
	first := statuses[c.id]
	if first.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
		return s.exited(ctx, e, c, first, relists)
	}
	last := runtimeapi.ContainerState(-1)
	if first != nil {
		last = first.GetState()
	}
	for {
		select {
		case <-ctx.Done():
			return fail(reason.Error, ctx.Err(), fmt.Sprintf("init container %q did not exit", s.name))
		case <-tick.C:
		}
		// PLEG relist: what state is the container in now?
		relists++
		list, err := e.client.ListContainers(ctx, e.podFilter())
		if err != nil {
			return fail(reason.Error, err, "ListContainers failed")
		}
		state := last
		for _, ctr := range list.Containers {
			if ctr.Id == c.id {
				state = ctr.State
			}
		}
		if state != last {
			// A change: the pod worker reads the pod's status again (GetPodStatus).
			last = state
			if _, err := e.client.PodSandboxStatus(ctx, e.rt.sandboxID); err != nil {
				return fail(reason.Error, err, "PodSandboxStatus failed")
			}
			st, err := e.client.ContainerStatus(ctx, c.id)
			if err != nil {
				return fail(reason.Error, err, "ContainerStatus failed")
			}
			if cs := st.GetStatus(); cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
				return s.exited(ctx, e, c, cs, relists)
			}
		}
	}
}

func (s waitInitStep) exited(ctx context.Context, e *Engine, c *containerRuntime, cs *runtimeapi.ContainerStatus, relists int) Result {
	x := e.containerExited(c, cs)
	started, finished := time.Unix(0, cs.StartedAt), time.Unix(0, cs.FinishedAt)
	details := []Detail{kv("exit code", fmt.Sprint(cs.ExitCode)), kv("reason", cs.Reason),
		kv("ran for", finished.Sub(started).Round(time.Millisecond).String()), kv("relists", fmt.Sprint(relists))}
	if cs.Message != "" {
		details = append(details, kv("termination message", cs.Message))
	}
	if cs.ExitCode == 0 {
		return ok(fmt.Sprintf("init container %q exited 0 (%s)", s.name, cs.Reason), details...)
	}
	details = append(details, kv("next", e.restartReason(c, cs.ExitCode)))
	err := fmt.Errorf("init container %q exited with code %d (%s)", s.name, cs.ExitCode, cs.Reason)
	if r, all := e.restartAll([]exit{x}, err.Error(), details); all {
		return r
	}
	if x.restart {
		// computeInitContainerActions: a failed init container is started
		// again (with back-off) when ShouldContainerBeRestarted says so.
		e.scheduleRestart(s.name)
		err = fmt.Errorf("%w; the kubelet restarts it (%s)", err, e.restartDecision(c, cs.ExitCode).Why)
	}
	details = append(details, e.stopTerminalPod(ctx)...)
	r := fail(reasonOr(cs.Reason, reason.Error), err, err.Error())
	r.Details = details
	return r
}

func reasonOr(reason, dflt string) string {
	if reason == "" {
		return dflt
	}
	return reason
}
