package steps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

// restartAll handles exits of which one matched a RestartAllContainers rule
// (RestartAllContainersOnContainerExits, beta and on in v1.37): the pod's
// AllContainersRestarting condition turns True
// (GenerateAllContainersRestartingCondition, pkg/kubelet/status/generate.go)
// and the kubelet's next sync resets the pod (computePodActions with
// restartAllContainers: ContainersToReset), then starts it again from its
// first init container. It plans those steps and reports the exit.
func (e *Engine) restartAll(exits []exit, summary string, details []Detail) (Result, bool) {
	for _, x := range exits {
		d := e.restartDecision(x.c, x.code)
		if !d.RestartAll {
			continue
		}
		e.tracker.RestartingAll()
		msg := summary + ": the kubelet resets the pod in place: it kills and removes every container, then starts them again from the first " + firstKind(e)
		if c := x.c; e.opts.MaxRestarts >= 0 && c.restarts >= e.opts.MaxRestarts+c.extra {
			msg = fmt.Sprintf("%s; gave up: the pod was reset %s (--max-restarts %d); the kubelet would reset it again, without back-off",
				msg, plural(c.restarts, "time", "times"), e.opts.MaxRestarts)
		} else {
			e.scheduleRestartAll()
		}
		r := fail(reasonOr(x.reason, reason.Error), fmt.Errorf("%s", msg), msg)
		details = append(details, kv("condition", "AllContainersRestarting=True ("+reason.RestartAllContainersStarted+")"))
		r.Details = details
		return r, true
	}
	return Result{}, false
}

// scheduleRestartAll plans, right after the running step, the reset and
// the pod's containers again: each init container (pull, create, start,
// wait), each container (pull, create, start, postStart), then a relist.
// There is no back-off step: the removed containers leave no status, so
// doBackOff finds nothing to wait for.
func (e *Engine) scheduleRestartAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	var added []*Step
	add := func(stage Stage, title, container string, a action) {
		added = append(added, newStep(0, stage, title, container, a))
	}
	add(StageContainers, "reset the pod: kill and remove every container (RestartAllContainers)", "", resetStep{})
	for i := range e.pod.Spec.InitContainers {
		c := &e.pod.Spec.InitContainers[i]
		e.planContainer(add, StageInit, c, isSidecar(c))
	}
	for i := range e.pod.Spec.Containers {
		e.planContainer(add, StageContainers, &e.pod.Spec.Containers[i], false)
	}
	for _, s := range added[1:] {
		s.Title += " (after RestartAllContainers)"
	}
	// The steps still to come (a relist, ready) would watch the old
	// containers: the new plan replaces them.
	rest := e.steps[e.next+1:]
	var keep []*Step
	for _, s := range rest {
		if s.State != Pending || (s.Kind != KindRelist && s.Kind != KindReady && s.Kind != KindBackoff && !s.Kind.PerContainer()) {
			keep = append(keep, s)
		}
	}
	if e.opts.Settle > 0 {
		add(StageContainers, relistTitle, "", relistStep{})
	}
	if e.opts.WaitReady {
		add(StageReady, readyTitle, "", readyStep{})
	}
	e.steps = append(append(e.steps[:e.next+1:e.next+1], added...), keep...)
	for i, s := range e.steps {
		s.ID = i + 1
	}
	e.restarting = true
}

// resetStep mirrors SyncPod step 3 with ContainersToReset
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go): for every container of
// the pod the runtime still has, in getContainersToReset's order (the
// regular containers, then the init containers, that did not trigger the
// reset; then those that did, last), one after another: a running one is
// killed (killContainer, reason RestartAllContainers, message "killing")
// with the grace period override 0, which killContainer
// (kuberuntime_container.go) raises to minimumGracePeriodInSeconds, so
// StopContainer gets timeout 2 (resetGracePeriod), and with no preStop
// hook (killContainer runs it only for a grace period above 0); then each
// is removed (removeContainer). The kubelet then syncs again at once.
type resetStep struct{}

// resetGracePeriod is StopContainer's timeout for a running container of a
// RestartAllContainers reset: SyncPod passes killContainer the override 0
// ("Killing containers without grace period", kuberuntime_manager.go), and
// killContainer raises every grace period below minimumGracePeriodInSeconds
// to it before it calls StopContainer (kuberuntime_container.go).
const resetGracePeriod int64 = minimumGracePeriod

func (resetStep) mirrors() string {
	return "SyncPod → computePodActions (ContainersToReset, getContainersToReset) (pkg/kubelet/kuberuntime/kuberuntime_manager.go) → killContainer + removeContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
}

func (resetStep) explain() string {
	return "A container exited with a RestartAllContainers rule, so the kubelet restarts the whole pod in place, keeping its sandbox, IP and volumes: it kills the running containers one after another, without their preStop hooks and with the shortest grace period the kubelet ever gives (2 s: StopContainer's timeout; SyncPod asks for 0, killContainer raises it to its minimum), and removes every container from the runtime, those that triggered the reset last. The pod's AllContainersRestarting condition is True until they are all gone; each container then shows Waiting with reason RestartingAllContainers and its restart count goes up by one. The next sync starts the pod again from its first init container, without back-off."
}

// resetOrder lists the instances to reset, as getContainersToReset orders
// them: targets of the regular containers, of the init containers, then
// the sources (exited with a matching RestartAllContainers rule).
func (e *Engine) resetOrder() []instance {
	var targets, initTargets, sources, initSources []instance
	for _, in := range e.createdLocked() {
		if e.rt.removed[in.id] {
			continue
		}
		src := in.id == in.c.id && in.c.exited && e.restartDecision(in.c, in.c.exitCode).RestartAll
		switch {
		case src && in.c.init:
			initSources = append(initSources, in)
		case src:
			sources = append(sources, in)
		case in.c.init:
			initTargets = append(initTargets, in)
		default:
			targets = append(targets, in)
		}
	}
	return append(append(append(targets, initTargets...), sources...), initSources...)
}

func (resetStep) requests(e *Engine) []Request {
	var out []Request
	for _, in := range e.resetOrder() {
		if in.id == in.c.id && !in.c.exited {
			out = append(out, Request{Method: "StopContainer", Message: &runtimeapi.StopContainerRequest{ContainerId: in.id, Timeout: resetGracePeriod},
				Note: in.c.spec.Name + " is running: killed with the minimum grace period (SyncPod's override 0, raised by killContainer), no preStop hook"})
		}
		out = append(out, Request{Method: "RemoveContainer", Message: &runtimeapi.RemoveContainerRequest{ContainerId: in.id}, Note: in.c.spec.Name})
	}
	return out
}

func (resetStep) run(ctx context.Context, e *Engine) Result {
	e.mu.Lock()
	order := e.resetOrder()
	e.mu.Unlock()
	var details []Detail
	killed, removed := 0, 0
	for _, in := range order {
		if in.id == in.c.id && !in.c.exited {
			e.tracker.Record(corev1.EventTypeNormal, reason.KillingContainer, containerObject(in.c), "killing")
			if _, err := e.client.StopContainer(ctx, in.id, resetGracePeriod); err != nil && !notFound(err) {
				return fail(reason.ErrKillContainer, err, fmt.Sprintf("killing container %q failed", in.c.spec.Name))
			}
			killed++
			details = append(details, kv(in.c.spec.Name, fmt.Sprintf("killed (grace period %d s: the override 0 raised to the kubelet's minimum), removed", resetGracePeriod)))
		} else {
			details = append(details, kv(in.c.spec.Name, "removed ("+shortID(in.id)+")"))
		}
		if _, err := e.client.RemoveContainer(ctx, in.id); err != nil && !notFound(err) {
			return fail(reason.ErrRemoveContainer, err, fmt.Sprintf("removing container %q failed", in.c.spec.Name))
		}
		e.mu.Lock()
		e.rt.removed[in.id] = true
		e.mu.Unlock()
		removed++
	}
	// The runtime has none of the pod's containers left: each restarts
	// from a new container, attempt+1 (calcRestartCountByLogDir finds the
	// old logs), and the status says why.
	var names []string
	e.mu.Lock()
	for _, n := range e.rt.order {
		c := e.rt.containers[n]
		c.oldIDs, c.id, c.config, c.exited, c.startedAt = nil, "", nil, false, time.Time{}
		c.restarts++
		names = append(names, n)
	}
	e.mu.Unlock()
	e.tracker.ResetAll(names)
	details = append(details, kv("condition", "AllContainersRestarting=False: every container is gone (AllContainersRestartCleanedUp)"))
	return ok(fmt.Sprintf("reset the pod: killed %s, removed %s; starting again from the first %s", plural(killed, "container", "containers"),
		plural(removed, "container", "containers"), firstKind(e)), details...)
}

func firstKind(e *Engine) string {
	if len(e.pod.Spec.InitContainers) > 0 {
		return "init container"
	}
	return "container"
}
