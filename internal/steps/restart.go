package steps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/restart"
)

// shouldRestart mirrors kubecontainer.ShouldContainerBeRestarted
// (pkg/kubelet/container/helpers.go) for an exited container, which with
// ContainerRestartRules (beta, on in v1.37) is ContainerShouldRestart
// (pkg/api/v1/pod/util.go, internal/restart): the container's
// restartPolicyRules, then its restartPolicy, then the pod's (Always: any
// exit; OnFailure: a non-zero exit; Never: none). A sidecar (an init
// container with restartPolicy Always) is always restarted
// (computeInitContainerActions); a regular init container's exit 0 never
// reaches here (it completed).
func (e *Engine) shouldRestart(c *containerRuntime, exitCode int32) bool {
	return e.restartDecision(c, exitCode).Restart
}

// restartDecision is shouldRestart with the rule or policy that decided.
func (e *Engine) restartDecision(c *containerRuntime, exitCode int32) restart.Decision {
	if c.init && isSidecar(c.spec) {
		return restart.Decision{Restart: true, Why: "a sidecar (restartPolicy Always on the init container) is always restarted"}
	}
	return restart.Decide(c.spec, &e.pod.Spec, exitCode, e.opts.Config.Gates)
}

// restartReason says in words why the kubelet restarts (or not) a container.
func (e *Engine) restartReason(c *containerRuntime, exitCode int32) string {
	d := e.restartDecision(c, exitCode)
	if c.init && isSidecar(c.spec) {
		return d.Why
	}
	verb := "not restarted"
	if d.Restart {
		verb = "restarted"
	}
	return fmt.Sprintf("%s: exit code %d is %s", d.Why, exitCode, verb)
}

// killContainer mirrors killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)
// for a container the kubelet kills while the pod runs (a failed postStart
// hook or startup probe): a Killing event with message, StopContainer with
// the grace period, then the exit as ContainerStatus reports it. It reports
// false when the container could not be stopped or did not exit.
func (e *Engine) killContainer(ctx context.Context, c *containerRuntime, message string) (exit, bool) {
	e.tracker.Record(corev1.EventTypeNormal, reason.KillingContainer, containerObject(c), message)
	if _, err := e.client.StopContainer(ctx, c.id, e.gracePeriod()); err != nil {
		return exit{}, false
	}
	st, err := e.client.ContainerStatus(ctx, c.id)
	if err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return exit{}, false
	}
	return e.containerExited(c, st.GetStatus()), true
}

// scheduleRestart plans the kubelet's next syncs for container name right
// after the running step: the back-off check, then the container's steps
// again (a new container, attempt+1), and a relist to watch it. It is
// called by the running step's action.
func (e *Engine) scheduleRestart(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.rt.containers[name]
	var added []*Step
	add := func(stage Stage, title, container string, a action) {
		added = append(added, newStep(0, stage, title, container, a)) // numbered below
	}
	stage := StageContainers
	if c.init {
		stage = StageInit
	}
	attempt := c.restarts + 1
	add(stage, fmt.Sprintf("check the restart back-off of %q", name), name, backoffStep{name: name})
	e.planContainer(add, stage, c.spec, c.init && isSidecar(c.spec))
	for _, s := range added[1:] {
		s.Title += fmt.Sprintf(" (restart %d)", attempt)
	}
	// A restarted regular container or sidecar is watched again, unless a
	// relist is still to come.
	if (!c.init || isSidecar(c.spec)) && e.opts.Settle > 0 && !e.pendingLocked(KindRelist) {
		add(StageContainers, relistTitle, "", relistStep{})
	}
	if e.opts.WaitReady && !e.pendingLocked(KindReady) {
		add(StageReady, readyTitle, "", readyStep{})
	}
	at := e.next + 1
	added = append(added, e.steps[at:]...)
	e.steps = append(e.steps[:at], added...)
	for i, s := range e.steps {
		s.ID = i + 1
	}
	e.restarting = true
}

// pendingLocked says whether a step of kind k is still to come after the
// running one. Must be called with e.mu held.
func (e *Engine) pendingLocked(k Kind) bool {
	for _, s := range e.steps[e.next+1:] {
		if s.Kind == k && s.State == Pending {
			return true
		}
	}
	return false
}

// backoffStep mirrors the back-off check the kubelet makes before starting a
// container that exited: doBackOff (pkg/kubelet/kuberuntime/kuberuntime_manager.go),
// called from SyncPod's start().
type backoffStep struct{ name string }

func (backoffStep) mirrors() string {
	return "kubeGenericRuntimeManager.SyncPod → start → doBackOff (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (backoffStep) explain() string {
	return "Before starting a container again the kubelet checks its back-off, keyed by pod and container and counted from when the last container finished. The first restart happens at once and starts a 10 s back-off; while the next exit is within the back-off the kubelet only records BackOff and reports the container Waiting with reason CrashLoopBackOff; once it is over it starts a new container (attempt+1) and doubles the back-off, up to 5 min. The old container stays in the runtime (its status and logs are the container's lastState and `kubectl logs --previous`) until garbage collection. podstep waits the back-off times --backoff-scale and gives up after --max-restarts restarts."
}

func (backoffStep) requests(*Engine) []Request { return nil }

func (s backoffStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	obj := containerObject(c)
	now := e.now()
	details := []Detail{kv("restarts so far", fmt.Sprint(c.restarts)), kv("last exit", fmt.Sprintf("code %d at %s", c.exitCode, c.finishedAt.Format("15:04:05.000")))}
	inBackOff := c.crash.inBackOffSince(c.finishedAt, now)
	var delay time.Duration
	if inBackOff {
		delay = c.crash.delay
	}
	crashMsg := func(d time.Duration) string {
		return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, s.name, podRef(e))
	}
	if e.opts.MaxRestarts >= 0 && c.restarts >= e.opts.MaxRestarts+c.extra {
		next := "at once"
		if inBackOff {
			next = "after back-off " + delay.String()
			e.tracker.Record(corev1.EventTypeWarning, reason.BackOffStartContainer, obj, fmt.Sprintf("Back-off restarting failed container %s in pod %s", s.name, podRef(e)))
			e.tracker.Waiting(s.name, reason.ErrCrashLoopBackOff, crashMsg(delay))
		}
		err := fmt.Errorf("gave up: container %q restarted %s (--max-restarts %d); the kubelet would restart it again %s, and keep doing so",
			s.name, plural(c.restarts, "time", "times"), e.opts.MaxRestarts, next)
		r := fail(reason.ErrCrashLoopBackOff, err, err.Error())
		r.Details = details
		// The loop's cause is the last exit's (a back-off alone explains
		// nothing); crash-loop-back-off when that exit had none (exit 0).
		r.Explanation = c.exitExplained
		return r
	}
	if inBackOff {
		e.tracker.Record(corev1.EventTypeWarning, reason.BackOffStartContainer, obj, fmt.Sprintf("Back-off restarting failed container %s in pod %s", s.name, podRef(e)))
		e.tracker.Waiting(s.name, reason.ErrCrashLoopBackOff, crashMsg(delay))
		wait := e.scaled(delay - now.Sub(c.finishedAt))
		details = append(details, kv("back-off", delay.String()), kv("waited", wait.Round(time.Millisecond).String()+scaleNote(e)))
		snap := e.running()
		e.emit(Event{Kind: Waiting, Step: snap, Wait: &Wait{What: "back-off", Container: s.name, Delay: delay, For: wait, Scale: e.opts.BackoffScale}})
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fail(reason.ErrCrashLoopBackOff, ctx.Err(), "interrupted during the back-off")
		}
	}
	c.crash = c.crash.next(e.now())
	e.mu.Lock()
	c.oldIDs = append(c.oldIDs, c.id)
	c.id, c.config, c.exited = "", nil, false
	c.restarts++
	e.mu.Unlock()
	details = append(details, kv("next back-off", c.crash.delay.String()))
	if !inBackOff {
		return ok(fmt.Sprintf("not in back-off: restart %d of %q at once", c.restarts, s.name), details...)
	}
	return ok(fmt.Sprintf("back-off %s over: restart %d of %q", delay, c.restarts, s.name), details...)
}

func scaleNote(e *Engine) string {
	if e.opts.BackoffScale == 1 {
		return ""
	}
	return fmt.Sprintf(" (--backoff-scale %g)", e.opts.BackoffScale)
}
