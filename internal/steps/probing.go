package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/probe"
	"github.com/podstep/podstep/internal/reason"
)

// probeWorker is one of the kubelet's probe workers (pkg/kubelet/prober/worker.go):
// one probe of one container, on its own period.
type probeWorker struct {
	c      *containerRuntime
	kind   string // probe.KindStartup or probe.KindReadiness
	p      *corev1.Probe
	spec   probe.Spec
	tr     *probe.Tracker
	next   time.Time // the worker's next tick
	probes int
	done   bool // the worker stored its final result (startup)
}

func newWorker(c *containerRuntime, kind string, p *corev1.Probe, start time.Time) *probeWorker {
	spec := probe.Timing(p)
	return &probeWorker{c: c, kind: kind, p: p, spec: spec, tr: probe.NewTracker(kind, spec), next: start}
}

// due says whether the worker probes at now: on its tick, and once
// initialDelaySeconds have passed since the container started (earlier
// ticks are skipped, not delayed, as in doProbe).
func (w *probeWorker) due(now time.Time) bool {
	if now.Before(w.next) {
		return false
	}
	for !w.next.After(now) {
		w.next = w.next.Add(w.spec.Period)
	}
	return w.spec.PastInitialDelay(w.c.startedAt, now)
}

// runProbe runs p once against container c (prober.runProbe,
// pkg/kubelet/prober/prober.go): exec through ExecSync with the command's
// $(VAR) references expanded; httpGet and tcpSocket from the node to the
// pod IP. An attempt that errored is retried, as runProbeWithRetries does.
func (e *Engine) runProbe(ctx context.Context, w *probeWorker) probe.Result {
	c, p := w.c, w.p
	if e.simulated() && (p.HTTPGet != nil && p.HTTPGet.Host == "" || p.TCPSocket != nil && p.TCPSocket.Host == "") {
		// The simulated runtime's pod IPs lead nowhere: sending the probe
		// there could reach some other machine.
		return probe.Result{Outcome: probe.Success, Target: "the pod IP " + first(e.rt.podIPs),
			Output: "not sent: the simulated runtime runs nothing at the pod IP; counted as a success"}
	}
	return probe.Retry(probe.MaxProbeRetries, func() probe.Result {
		switch {
		case p.Exec != nil:
			cmd := probe.ExpandCommand(p.Exec.Command, c.spec.Env)
			return probe.Exec(ctx, e.execFunc(c.id), &corev1.ExecAction{Command: cmd}, w.spec.Timeout)
		case p.HTTPGet != nil:
			return probe.HTTPGet(ctx, p.HTTPGet, first(e.rt.podIPs), c.spec, w.spec.Timeout, probe.ProbeUserAgent)
		case p.TCPSocket != nil:
			return probe.TCPSocket(ctx, p.TCPSocket, first(e.rt.podIPs), c.spec, w.spec.Timeout)
		case p.GRPC != nil:
			return probe.Result{Outcome: probe.Unknown, Err: errors.New("gRPC probes are not supported by podstep"), Target: "grpc"}
		}
		return probe.Result{Outcome: probe.Unknown, Err: errors.New("missing probe handler")}
	})
}

// probeOnce runs one tick of w: the probe, the kubelet's event for a
// failure, and the threshold bookkeeping. It returns the probe's result and
// the result the worker stores, if it stores one now.
func (e *Engine) probeOnce(ctx context.Context, w *probeWorker) (probe.Result, probe.Outcome, bool) {
	r := e.runProbe(ctx, w)
	w.probes++
	if why := probe.EventReason(r); why != "" {
		e.tracker.Record(corev1.EventTypeWarning, why, containerObject(w.c), probe.EventMessage(w.kind, r))
	}
	out, stored := w.tr.Observe(r)
	return r, out, stored
}

// probeLine is one probe's result as a step detail.
func probeLine(w *probeWorker, r probe.Result) Detail {
	v := fmt.Sprintf("%s %s", r.Outcome, r.Target)
	switch {
	case r.Err != nil:
		v += ": errored: " + r.Err.Error()
	case !r.Outcome.Passed() && r.Output != "":
		v += ": " + r.Output
	case r.Code != 0:
		v += fmt.Sprintf(" (HTTP %d)", r.Code)
	case r.Output != "" && strings.HasPrefix(r.Output, "not sent"):
		v += ": " + r.Output
	}
	return kv(fmt.Sprintf("%s %s probe %d", w.c.spec.Name, w.kind, w.probes), v)
}

// keepLast bounds a list of details to its last n entries.
func keepLast(d []Detail, n int) []Detail {
	if len(d) <= n {
		return d
	}
	return append([]Detail{kv("…", fmt.Sprintf("%d earlier probes", len(d)-n))}, d[len(d)-n:]...)
}

// killForProbe kills a container whose startup probe failed, as
// computePodActions does, and plans its restart per restartPolicy.
// computePodActions says ", will be restarted" when the pod's restartPolicy
// is not Never or, with ContainerRestartRules, the container's own
// restartPolicy is not Never (its rules need an exit code, so they are not
// looked at here); the restart itself follows the exit (shouldRestart).
func (e *Engine) killForProbe(ctx context.Context, c *containerRuntime) (exit, bool) {
	msg := fmt.Sprintf("Container %s failed startup probe", c.spec.Name)
	will := e.pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	if c.spec.RestartPolicy != nil && e.opts.Config.Gates.Enabled(gate.ContainerRestartRules) {
		will = *c.spec.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	if will {
		msg += ", will be restarted"
	}
	x, killed := e.killContainer(ctx, c, msg)
	if killed && x.restart {
		e.scheduleRestart(c.spec.Name)
	}
	return x, killed
}

// sleepUntilDue waits for the earliest worker tick, at most one poll interval.
func (e *Engine) sleepUntilDue(ctx context.Context, ws []*probeWorker) error {
	d := e.opts.PollInterval
	now := time.Now()
	for _, w := range ws {
		if !w.done && w.next.Sub(now) < d {
			d = w.next.Sub(now)
		}
	}
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// startupStep gates the next init container on a sidecar's startup probe:
// computeInitContainerActions starts the next init container only once a
// sidecar is started, which with a startupProbe means the probe succeeded.
type startupStep struct{ name string }

func (startupStep) mirrors() string {
	return "prober worker.doProbe (pkg/kubelet/prober/worker.go) → computeInitContainerActions (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
}

func (startupStep) explain() string {
	return "A sidecar (an init container with restartPolicy Always) does not block the pod like other init containers: the next init container starts as soon as the sidecar is started. With a startupProbe, started means the probe succeeded: the kubelet's probe worker probes every periodSeconds once initialDelaySeconds have passed, and the container is started after successThreshold successes. failureThreshold failures in a row make the kubelet kill the sidecar and restart it."
}

func (s startupStep) requests(e *Engine) []Request {
	c := e.rt.containers[s.name]
	if p := c.spec.StartupProbe; p != nil && p.Exec != nil {
		return []Request{{Method: "ExecSync", Message: &runtimeapi.ExecSyncRequest{ContainerId: idOr(c.id), Cmd: probe.ExpandCommand(p.Exec.Command, c.spec.Env), Timeout: int64(probe.Timing(p).Timeout / time.Second)}, Note: "every periodSeconds until the probe passes"}}
	}
	return nil
}

func idOr(id string) string {
	if id == "" {
		return "<container id from CreateContainer>"
	}
	return id
}

func (s startupStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	w := newWorker(c, probe.KindStartup, c.spec.StartupProbe, time.Now())
	ctx, cancel := context.WithTimeout(ctx, e.opts.InitTimeout)
	defer cancel()
	var details []Detail
	for {
		if w.due(time.Now()) {
			r, out, stored := e.probeOnce(ctx, w)
			details = append(details, probeLine(w, r))
			if stored && out == probe.Success {
				e.tracker.Started(s.name)
				return ok(fmt.Sprintf("startup probe passed after %s: sidecar %q started; the next init container may start", plural(w.probes, "probe", "probes"), s.name), keepLast(details, 10)...)
			}
			if stored {
				msg := fmt.Sprintf("startup probe failed %d times in a row (failureThreshold %d)", w.spec.FailureThreshold, w.spec.FailureThreshold)
				if x, killed := e.killForProbe(ctx, c); killed {
					details = append(details, kv("next", e.restartReason(c, x.code)))
				}
				r := fail(reason.ContainerUnhealthy, errors.New(msg), msg+": the kubelet kills the sidecar")
				r.Details = keepLast(details, 10)
				return r
			}
		}
		if err := e.sleepUntilDue(ctx, []*probeWorker{w}); err != nil {
			r := fail(reason.ContainerUnhealthy, err, fmt.Sprintf("sidecar %q did not start (startup probe) within %s", s.name, e.opts.InitTimeout))
			r.Details = keepLast(details, 10)
			return r
		}
	}
}

// readyStep runs the pod's startup and readiness probes until the pod is
// Ready, as the kubelet's probe workers do once the containers run.
type readyStep struct{}

func (readyStep) mirrors() string {
	return "probeManager workers (pkg/kubelet/prober/worker.go, prober.go) → statusManager.SetContainerReadiness (pkg/kubelet/status/status_manager.go)"
}

func (readyStep) explain() string {
	return "The kubelet probes each container on its own worker: the startupProbe first (the container is not started until it passes; failureThreshold failures get it killed and restarted), then the readinessProbe every periodSeconds. A container is ready after successThreshold successes and unready after failureThreshold failures; each failure is an Unhealthy event. A container without a readinessProbe is ready as soon as it started. The pod is Ready when all its containers (and sidecars) are. podstep probes until then, or --ready-timeout."
}

func (readyStep) requests(e *Engine) []Request {
	var out []Request
	for _, n := range e.rt.order {
		c := e.rt.containers[n]
		if c.init && !isSidecar(c.spec) {
			continue
		}
		for _, p := range []*corev1.Probe{c.spec.StartupProbe, c.spec.ReadinessProbe} {
			switch {
			case p == nil:
			case p.Exec != nil:
				out = append(out, Request{Method: "ExecSync", Message: &runtimeapi.ExecSyncRequest{ContainerId: idOr(c.id), Cmd: probe.ExpandCommand(p.Exec.Command, c.spec.Env), Timeout: int64(probe.Timing(p).Timeout / time.Second)}, Note: "every periodSeconds"})
			}
		}
	}
	return out
}

func (readyStep) run(ctx context.Context, e *Engine) Result {
	start := time.Now()
	var ws []*probeWorker
	startup := map[string]*probeWorker{}
	snap := e.tracker.Snapshot()
	for _, c := range e.watched() {
		if c.spec.StartupProbe != nil && !started(snap, c.spec.Name) {
			w := newWorker(c, probe.KindStartup, c.spec.StartupProbe, start)
			ws = append(ws, w)
			startup[c.spec.Name] = w
		}
		if c.spec.ReadinessProbe != nil {
			ws = append(ws, newWorker(c, probe.KindReadiness, c.spec.ReadinessProbe, start))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.ReadyTimeout)
	defer cancel()
	var details []Detail
	// The pod's readiness changes only when a worker stores a result, so it
	// is read again only then, not on every poll.
	changed := true
	for {
		if changed && podReady(e.tracker.Snapshot()) {
			return ok(fmt.Sprintf("the pod is Ready after %s", time.Since(start).Round(time.Millisecond)), keepLast(details, 12)...)
		}
		changed = false
		now := time.Now()
		for _, w := range ws {
			if w.done {
				continue
			}
			// Readiness waits for the container to be started.
			if sw := startup[w.c.spec.Name]; w.kind == probe.KindReadiness && sw != nil && !sw.done {
				continue
			}
			if !w.due(now) {
				continue
			}
			r, out, stored := e.probeOnce(ctx, w)
			details = append(details, probeLine(w, r))
			if !stored {
				continue
			}
			changed = true
			switch {
			case w.kind == probe.KindReadiness:
				e.tracker.SetReady(w.c.spec.Name, out == probe.Success)
			case out == probe.Success:
				w.done = true
				e.tracker.Started(w.c.spec.Name)
			default:
				w.done = true
				x, killed := e.killForProbe(ctx, w.c)
				msg := fmt.Sprintf("startup probe of %q failed %d times in a row (failureThreshold %d): the kubelet kills it", w.c.spec.Name, w.spec.FailureThreshold, w.spec.FailureThreshold)
				if killed {
					details = append(details, kv("next", e.restartReason(w.c, x.code)))
				}
				r := fail(reason.ContainerUnhealthy, errors.New(msg), msg)
				r.Details = keepLast(details, 12)
				return r
			}
		}
		if err := e.sleepUntilDue(ctx, ws); err != nil {
			msg := fmt.Sprintf("the pod is not Ready after %s: %s", e.opts.ReadyTimeout, unready(e.tracker.Snapshot()))
			r := fail(reason.ContainersNotReady, errors.New(msg), msg)
			r.Details = keepLast(details, 12)
			return r
		}
	}
}

// started says whether the pod status has container name started.
func started(s podstate.Snapshot, name string) bool {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), s.Status.InitContainerStatuses...), s.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs.Started != nil && *cs.Started
		}
	}
	return false
}

// podReady says whether the pod's Ready condition is True.
func podReady(s podstate.Snapshot) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unready is the Ready condition's message (which containers are not ready).
func unready(s podstate.Snapshot) string {
	for _, c := range s.Status.Conditions {
		if c.Type == corev1.PodReady && c.Message != "" {
			return c.Message
		}
	}
	return "the Ready condition is False"
}

// simulated says the runtime is podstep's built-in simulator, whose pod IPs
// are not real (Options.Simulated).
func (e *Engine) simulated() bool { return e.opts.Simulated }
