package steps

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/probe"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/sim"
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
// $(VAR) references expanded; httpGet, tcpSocket and grpc from the node to
// the pod IP. An attempt that errored is retried, as runProbeWithRetries
// does. On the simulator the network probes reach the listeners it opens
// for the container (sim: listen.go), at the pod's loopback IP, or at
// sim.HostNetworkAddress for a host-network pod.
func (e *Engine) runProbe(ctx context.Context, w *probeWorker) probe.Result {
	c, p := w.c, w.p
	host := e.probeHost()
	return probe.Retry(probe.MaxProbeRetries, func() probe.Result {
		switch {
		case p.Exec != nil:
			cmd := probe.ExpandCommand(p.Exec.Command, c.spec.Env)
			return probe.Exec(ctx, e.execFunc(c.id), &corev1.ExecAction{Command: cmd}, w.spec.Timeout)
		case p.HTTPGet != nil:
			return probe.HTTPGet(ctx, p.HTTPGet, host, c.spec, w.spec.Timeout, probe.ProbeUserAgent)
		case p.TCPSocket != nil:
			return probe.TCPSocket(ctx, p.TCPSocket, host, c.spec, w.spec.Timeout)
		case p.GRPC != nil:
			return probe.GRPC(ctx, p.GRPC, host, w.spec.Timeout)
		}
		return probe.Result{Outcome: probe.Unknown, Err: errors.New("missing probe handler")}
	})
}

// probeHost is the host a network probe with no host of its own reaches:
// the pod IP (the kubelet's status.PodIP). A host-network pod has no
// sandbox IP; on the simulator its containers serve on
// sim.HostNetworkAddress, which stands for the node's IP.
func (e *Engine) probeHost() string {
	if ip := first(e.rt.podIPs); ip != "" || !e.simulated() {
		return ip
	}
	return sim.HostNetworkAddress
}

// simProbePorts are the TCP ports c's probes and HTTP lifecycle hooks reach
// at the pod IP, sent to the simulator with its CreateContainer
// (sim.MetadataProbePorts): the simulator cannot read which ports the
// program binds, and a probe may name one its containerPorts do not
// declare.
func simProbePorts(c *corev1.Container) []int {
	var out []int
	add := func(port intstr.IntOrString) {
		if n, err := probe.ResolvePort(port, c); err == nil && n > 0 && n < 65536 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		switch {
		case p == nil:
		case p.HTTPGet != nil && p.HTTPGet.Host == "":
			add(p.HTTPGet.Port)
		case p.TCPSocket != nil && p.TCPSocket.Host == "":
			add(p.TCPSocket.Port)
		case p.GRPC != nil:
			add(intstr.FromInt32(p.GRPC.Port))
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil && h.HTTPGet != nil && h.HTTPGet.Host == "" {
				add(h.HTTPGet.Port)
			}
		}
	}
	return out
}

// probeRestsOn says, on the simulator, what a probe's verdict rests on:
// for exec, what the simulator reads of the command (execRestsOn); for a network probe, the listener the
// simulator opened for the container and the assumption behind it (that
// the program serves that port and answers as a healthy server does), or
// the probe-fail fault. "" on a real runtime or when the probe sends
// nothing to the pod (a host of its own).
func (e *Engine) probeRestsOn(w *probeWorker) string {
	if w.p.Exec != nil {
		// The command the prober sends: $(VAR) expanded, with the probe's timeout.
		return e.execRestsOn(w.c, probeField(w.kind), probe.ExpandCommand(w.p.Exec.Command, w.c.spec.Env), w.spec.Timeout)
	}
	return e.handlerRestsOn(w.c, probeField(w.kind), w.p.ProbeHandler)
}

// execRestsOn says, on the simulator, what the verdict of cmd run by
// ExecSync in c with timeout (an exec probe's, or an exec hook's with
// none) rests on: what the simulator reads of the command (sim.ReadExec,
// which its ExecSync answers from). "" on a real runtime.
func (e *Engine) execRestsOn(c *containerRuntime, kind string, cmd []string, timeout time.Duration) string {
	if !e.simulated() {
		return ""
	}
	img := c.simImage
	if img.Name == "" {
		img.Name = c.spec.Image
	}
	return kind + ": ExecSync: " + sim.ReadExec(cmd, c.config, e.simAnnotations(c), img, timeout).RestsOn
}

// handlerRestsOn is probeRestsOn for handler p of c, in the spec field
// kind (readinessProbe, postStart, ...).
func (e *Engine) handlerRestsOn(c *containerRuntime, kind string, p corev1.ProbeHandler) string {
	if !e.simulated() {
		return ""
	}
	name := c.spec.Name
	ann := e.simAnnotations(c)
	if p.Exec != nil {
		return e.execRestsOn(c, kind, p.Exec.Command, 0)
	}
	var port intstr.IntOrString
	what := ""
	switch {
	case p.HTTPGet != nil && p.HTTPGet.Host == "":
		port, what = p.HTTPGet.Port, "answers GET with 200"
		if strings.EqualFold(string(p.HTTPGet.Scheme), string(corev1.URISchemeHTTPS)) {
			what += " over TLS (a self-signed certificate, which the kubelet does not verify)"
		}
	case p.TCPSocket != nil && p.TCPSocket.Host == "":
		port, what = p.TCPSocket.Port, "accepts the connection"
	case p.GRPC != nil:
		port, what = intstr.FromInt32(p.GRPC.Port), "answers grpc.health.v1 Check with SERVING"
	default:
		return ""
	}
	n, err := probe.ResolvePort(port, c.spec)
	if err != nil {
		return ""
	}
	addr := net.JoinHostPort(e.probeHost(), strconv.Itoa(n))
	refuse, code, ferr := sim.ProbeFailure(ann, name)
	switch {
	case ferr != nil:
		return fmt.Sprintf("%s: fault: %v: the simulator answers HTTP 500 and NOT_SERVING", kind, ferr)
	case refuse:
		return fmt.Sprintf("%s: fault: %s%s: %s: the simulator listens on nothing, %s is refused", kind, sim.AnnotationProbeFail, name, sim.ProbeFailRefuse, addr)
	case code != 0:
		return fmt.Sprintf("%s: fault: %s%s: %d: the simulator's listener on %s answers HTTP %d and gRPC NOT_SERVING", kind, sim.AnnotationProbeFail, name, code, addr, code)
	}
	src := fmt.Sprintf("the container's declared containerPort %d", n)
	if !declaresPort(c.spec, n) {
		src = fmt.Sprintf("port %d, which its %s names but its containerPorts do not declare,", n, kind)
	}
	s := fmt.Sprintf("%s: assumed: the program serves %s and %s: the simulator's listener on %s does so for it", kind, src, what, addr)
	if first(e.rt.podIPs) == "" {
		s += fmt.Sprintf(" (host network: %s stands for the node's IP)", sim.HostNetworkAddress)
	}
	if msg, held := sim.ListenError(addr); held {
		s += fmt.Sprintf("; but the simulator could not listen there (%s): the probe reached the process of this machine that holds the port", msg)
	}
	return s
}

// probeField is the pod spec field of a probe kind (readinessProbe, ...).
func probeField(kind string) string {
	return strings.ToLower(kind[:1]) + kind[1:] + "Probe"
}

// declaresPort says whether c declares TCP containerPort n.
func declaresPort(c *corev1.Container, n int) bool {
	for _, p := range c.Ports {
		if int(p.ContainerPort) == n && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
			return true
		}
	}
	return false
}

// simAnnotations are the annotations the simulator reads its faults for c
// from: the pod's (its sandbox config) and the container's.
func (e *Engine) simAnnotations(c *containerRuntime) map[string]string {
	ann := map[string]string{}
	if sb, _, err := e.sandboxConfig(); err == nil {
		maps.Copy(ann, sb.GetAnnotations())
	}
	maps.Copy(ann, c.config.GetAnnotations())
	return ann
}

// restsOn gathers what the workers' verdicts rest on, each once, each
// after its container's name when named (the ready stage's step is the
// pod's, not one container's).
func (e *Engine) restsOn(ws []*probeWorker, named bool) []string {
	var out []string
	for _, w := range ws {
		r := e.probeRestsOn(w)
		if r != "" && named {
			r = w.c.spec.Name + ": " + r
		}
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
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
				r := ok(fmt.Sprintf("startup probe passed after %s: sidecar %q started; the next init container may start", plural(w.probes, "probe", "probes"), s.name), keepLast(details, 10)...)
				r.RestsOn = e.restsOn([]*probeWorker{w}, false)
				return r
			}
			if stored {
				msg := fmt.Sprintf("startup probe failed %d times in a row (failureThreshold %d)", w.spec.FailureThreshold, w.spec.FailureThreshold)
				if x, killed := e.killForProbe(ctx, c); killed {
					details = append(details, kv("next", e.restartReason(c, x.code)))
				}
				r := fail(reason.ContainerUnhealthy, errors.New(msg), msg+": the kubelet kills the sidecar")
				r.Details = keepLast(details, 10)
				r.RestsOn = e.restsOn([]*probeWorker{w}, false)
				return r
			}
		}
		if err := e.sleepUntilDue(ctx, []*probeWorker{w}); err != nil {
			r := fail(reason.ContainerUnhealthy, err, fmt.Sprintf("sidecar %q did not start (startup probe) within %s", s.name, e.opts.InitTimeout))
			r.Details = keepLast(details, 10)
			r.RestsOn = e.restsOn([]*probeWorker{w}, false)
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
			r := ok(fmt.Sprintf("the pod is Ready after %s", time.Since(start).Round(time.Millisecond)), keepLast(details, 12)...)
			r.RestsOn = e.restsOn(ws, true)
			return r
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
				r.RestsOn = e.restsOn(ws, true)
				return r
			}
		}
		if err := e.sleepUntilDue(ctx, ws); err != nil {
			msg := fmt.Sprintf("the pod is not Ready after %s: %s", e.opts.ReadyTimeout, unready(e.tracker.Snapshot()))
			r := fail(reason.ContainersNotReady, errors.New(msg), msg)
			r.Details = keepLast(details, 12)
			r.RestsOn = e.restsOn(ws, true)
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
