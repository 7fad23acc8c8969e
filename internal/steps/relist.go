package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/restart"
)

const relistTitle = "relist: are the containers still running?"

// relistStep mirrors how the kubelet learns that a running container
// exited: the PLEG relists the pod's containers (GenericPLEG.Relist,
// pkg/kubelet/pleg/generic.go, once a second), and on a change the pod
// worker syncs the pod again, where computePodActions decides whether to
// restart it (ShouldContainerBeRestarted).
type relistStep struct{}

func (relistStep) mirrors() string {
	return "GenericPLEG.Relist (pkg/kubelet/pleg/generic.go) → podWorkers sync → computePodActions (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (relistStep) explain() string {
	return "Once the containers are started, SyncPod returns; the kubelet learns what happens next from its PLEG, which relists the containers every second and, for each change, reads the pod's status again (PodSandboxStatus, ContainerStatus). A container that exited is restarted or not by the pod's restartPolicy (Always: any exit; OnFailure: a non-zero exit; Never: none), after the restart back-off. When every container has terminated for good, the pod is Succeeded or Failed. podstep relists for --settle (default 1 s, one PLEG period) so a container that dies at once is seen."
}

func (relistStep) requests(e *Engine) []Request {
	reqs := []Request{
		{Method: "ListPodSandbox", Message: &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: e.podFilter().LabelSelector}},
			Note: "first, the relist SyncPod asks for: the pod's sandboxes, then its containers and the status of each"},
		{Method: "ListContainers", Message: &runtimeapi.ListContainersRequest{Filter: e.podFilter()}, Note: fmt.Sprintf("then every %s for %s", e.opts.PollInterval, e.opts.Settle)},
		{Method: "PodSandboxStatus", Message: &runtimeapi.PodSandboxStatusRequest{PodSandboxId: e.placeholderSandbox()}, Note: "only when a container changed state"},
		{Method: "ContainerStatus", Note: "for each container that changed state"},
	}
	if e.anyNotRestartable() {
		reqs = append(reqs, e.terminalStopRequest("if every container has terminated for good (the pod is Succeeded or Failed)"))
	}
	return reqs
}

// anyNotRestartable says whether some regular container can stay stopped
// (IsContainerRestartable is false for it, or its policy lets a success
// stand), so that a relist may find the pod terminal.
func (e *Engine) anyNotRestartable() bool {
	for i := range e.pod.Spec.Containers {
		c := &e.pod.Spec.Containers[i]
		if !restart.Restartable(c, &e.pod.Spec, e.opts.Config.Gates) || !restart.Decide(c, &e.pod.Spec, 0, e.opts.Config.Gates).Restart {
			return true
		}
	}
	return false
}

// watched lists the containers a relist looks at: started regular
// containers and sidecars that have not been seen to exit.
func (e *Engine) watched() []*containerRuntime {
	var out []*containerRuntime
	for _, n := range e.rt.order {
		c := e.rt.containers[n]
		if c.id != "" && !c.exited && !c.startedAt.IsZero() && (!c.init || isSidecar(c.spec)) {
			out = append(out, c)
		}
	}
	return out
}

func (relistStep) run(ctx context.Context, e *Engine) Result {
	watch := e.watched()
	if len(watch) == 0 {
		return ok("no running container to watch")
	}
	// The window is counted in relists, one now and one per poll interval
	// over --settle, not in wall time: on a loaded machine the window
	// stretches a little instead of relisting fewer times, so the same run
	// shows the same calls. Relist k is due k-1 intervals after the first
	// begins (a schedule, not a ticker): when the first, which reads every
	// container's status, takes longer than an interval, the relists it
	// delayed follow at once instead of being dropped, and the last is
	// still due --settle after the first. A ticker drops the ticks missed,
	// so a first relist of 250 ms (a pod of 1,000 containers) stretched the
	// window by a whole interval each 100 ms over the first (issue 34).
	want := relistsIn(e.opts.Settle, e.opts.PollInterval)
	interval := max(e.opts.PollInterval, time.Millisecond)
	begun := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// The first relist is the one SyncPod asks for once its sync started
	// containers (podRelist); the later ones are the PLEG's periodic relist.
	relists := 1
	statuses, err := e.podRelist(ctx)
	if err != nil {
		return fail(reason.Error, err, err.Error())
	}
	var first []exit
	for _, c := range watch {
		if cs := statuses[c.id]; cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			first = append(first, e.containerExited(c, cs))
		}
	}
	if len(first) > 0 {
		return e.afterExits(ctx, first, relists)
	}
	var details []Detail
	for {
		if relists >= want {
			details = append(details, kv("relists", fmt.Sprint(relists)), kv("watched", names(watch)))
			return ok(fmt.Sprintf("all %s still running after %s", plural(len(watch), "container", "containers"), e.opts.Settle), details...)
		}
		if err := waitUntil(ctx, timer, begun.Add(time.Duration(relists)*interval)); err != nil {
			return fail(reason.Error, err, "interrupted while relisting")
		}
		relists++
		list, err := e.client.ListContainers(ctx, e.podFilter())
		if err != nil {
			return fail(reason.Error, err, "ListContainers failed")
		}
		// By ID, not a walk of the list per watched container: a relist
		// of a pod of n containers costs n, not n² (issue 34).
		notRunning := make(map[string]int, len(list.Containers))
		for _, ctr := range list.Containers {
			if ctr.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				notRunning[ctr.Id]++
			}
		}
		var changed []*containerRuntime
		for _, c := range watch {
			for range notRunning[c.id] {
				if !c.exited {
					changed = append(changed, c)
				}
			}
		}
		if len(changed) > 0 {
			if _, err := e.client.PodSandboxStatus(ctx, e.rt.sandboxID); err != nil {
				return fail(reason.Error, err, "PodSandboxStatus failed")
			}
			var exits []exit
			for _, c := range changed {
				st, err := e.client.ContainerStatus(ctx, c.id)
				if err != nil {
					return fail(reason.Error, err, "ContainerStatus failed")
				}
				if cs := st.GetStatus(); cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
					exits = append(exits, e.containerExited(c, cs))
				}
			}
			if len(exits) > 0 {
				return e.afterExits(ctx, exits, relists)
			}
		}
	}
}

// waitUntil waits, on timer, until the time due, or for ctx to end (its
// error). A time already past returns at once, unless ctx has ended.
func waitUntil(ctx context.Context, timer *time.Timer, due time.Time) error {
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err()
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// podRelist mirrors the relist SyncPod asks for when its sync did
// something (SyncPod's postSync → RequestPodRelist, pkg/kubelet/kubelet.go;
// GenericPLEG.relistPod, pkg/kubelet/pleg/generic.go): GetPod lists the
// pod's sandboxes and containers by its UID label (ListPodSandbox,
// ListContainers), and updateCache → GetPodStatus reads the sandbox's
// status and each listed container's (PodSandboxStatus, ContainerStatus).
// It returns the container statuses by ID.
func (e *Engine) podRelist(ctx context.Context) (map[string]*runtimeapi.ContainerStatus, error) {
	uid := map[string]string{"io.kubernetes.pod.uid": string(e.pod.UID)}
	if _, err := e.client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: uid}); err != nil {
		return nil, fmt.Errorf("ListPodSandbox failed: %w", err)
	}
	list, err := e.client.ListContainers(ctx, e.podFilter())
	if err != nil {
		return nil, fmt.Errorf("ListContainers failed: %w", err)
	}
	if _, err := e.client.PodSandboxStatus(ctx, e.rt.sandboxID); err != nil {
		return nil, fmt.Errorf("PodSandboxStatus failed: %w", err)
	}
	out := map[string]*runtimeapi.ContainerStatus{}
	byID := e.containersByID()
	for _, ctr := range list.Containers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("relist: %w", err)
		}
		st, err := e.client.ContainerStatus(ctx, ctr.Id)
		if err != nil {
			return nil, fmt.Errorf("ContainerStatus failed: %w", err)
		}
		out[ctr.Id] = st.GetStatus()
		if c := byID[ctr.Id]; c != nil {
			e.tracker.RuntimeStatus(c.spec.Name, st.GetStatus())
		}
	}
	return out, nil
}

// containersByID are the pod's containers by the ID of their current
// instance (the first in creation order, for an ID two share).
func (e *Engine) containersByID() map[string]*containerRuntime {
	out := make(map[string]*containerRuntime, len(e.rt.order))
	for _, n := range e.rt.order {
		if c := e.rt.containers[n]; out[c.id] == nil {
			out[c.id] = c
		}
	}
	return out
}

// relistsIn is how many relists a window of settle holds at one per poll
// interval, the first at once.
func relistsIn(settle, poll time.Duration) int {
	if poll <= 0 || settle <= 0 {
		return 1
	}
	return 1 + int((settle+poll-1)/poll)
}

// exit is one container seen exited, and what the kubelet does about it.
type exit struct {
	c       *containerRuntime
	code    int32
	reason  string
	restart bool
}

// containerExited records an exit the PLEG saw.
func (e *Engine) containerExited(c *containerRuntime, cs *runtimeapi.ContainerStatus) exit {
	started, finished := time.Unix(0, cs.StartedAt), time.Unix(0, cs.FinishedAt)
	c.exited, c.exitCode, c.finishedAt = true, cs.ExitCode, finished
	e.tracker.Terminated(c.spec.Name, cs.ExitCode, cs.Reason, cs.Message, started, finished)
	return exit{c: c, code: cs.ExitCode, reason: cs.Reason, restart: e.shouldRestart(c, cs.ExitCode)}
}

// afterExits ends a relist that saw containers exit: restarts are planned;
// a pod whose containers all terminated for good is Succeeded or Failed.
func (e *Engine) afterExits(ctx context.Context, exits []exit, relists int) Result {
	var details []Detail
	var failedExit *exit
	var said []string
	for i, x := range exits {
		what := fmt.Sprintf("container %q exited with code %d (%s)", x.c.spec.Name, x.code, x.reason)
		details = append(details, kv(x.c.spec.Name, what+"; "+e.restartReason(x.c, x.code)))
		switch d := e.restartDecision(x.c, x.code); {
		case d.RestartAll:
			what += " (" + d.Why + ")"
			if failedExit == nil {
				failedExit = &exits[i]
			}
		case x.restart:
			e.scheduleRestart(x.c.spec.Name)
			what += ": the kubelet restarts it"
		default:
			what += ": not restarted (" + e.restartDecision(x.c, x.code).Why + ")"
			if x.code != 0 && failedExit == nil {
				failedExit = &exits[i]
			}
		}
		said = append(said, what)
	}
	details = append(details, kv("relists", fmt.Sprint(relists)))
	summary := strings.Join(said, "; ")
	if r, all := e.restartAll(exits, summary, details); all {
		return r
	}
	phase := e.tracker.Snapshot().Status.Phase
	switch phase {
	case corev1.PodSucceeded:
		summary += "; every container completed: the pod is Succeeded"
	case corev1.PodFailed:
		summary += "; the pod is Failed"
	}
	details = append(details, e.stopTerminalPod(ctx)...)
	if failedExit != nil || anyNonZero(exits) {
		// A crash: the step shows the failure. When the kubelet restarts the
		// container, the run goes on with the restart (scheduleRestart).
		why := failedExit
		if why == nil {
			why = &exits[0]
		}
		r := fail(reasonOr(why.reason, reason.Error), fmt.Errorf("%s", summary), summary)
		r.Details = details
		for _, x := range exits {
			x.c.exitExplained = nil
			if x.code != 0 {
				x.c.exitExplained = e.explainExit(x, fmt.Sprintf("container %q exited with code %d (%s)", x.c.spec.Name, x.code, x.reason))
			}
		}
		r.Explanation = why.c.exitExplained
		return r
	}
	return ok(summary, details...)
}

func anyNonZero(exits []exit) bool {
	for _, x := range exits {
		if x.code != 0 {
			return true
		}
	}
	return false
}

func names(cs []*containerRuntime) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.spec.Name)
	}
	return strings.Join(n, ", ")
}
