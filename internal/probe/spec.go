package probe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// API defaults for a probe's timing fields (SetDefaults_Probe in
// pkg/apis/core/v1/defaults.go); initialDelaySeconds defaults to 0.
const (
	// DefaultPeriod is periodSeconds' default.
	DefaultPeriod = 10 * time.Second
	// DefaultTimeout is timeoutSeconds' default.
	DefaultTimeout = 1 * time.Second
	// DefaultSuccessThreshold is successThreshold's default.
	DefaultSuccessThreshold = 1
	// DefaultFailureThreshold is failureThreshold's default.
	DefaultFailureThreshold = 3
)

// Spec is a probe's effective timing, API defaults applied.
//
// How the kubelet's probe worker uses it (pkg/kubelet/prober/worker.go,
// prober_manager.go, kubelet 1.33):
//
//   - One worker per probe is started when the pod is synced
//     (probeManager.AddPod in Kubelet.SyncPod, after the volumes are mounted
//     and before the runtime's SyncPod creates sandbox and containers). It
//     probes once at once and then on a ticker of Period, so probes fall on
//     the worker's own period grid, not at the container's start. Only in
//     the first Period after the kubelet itself started does the worker
//     first sleep a random part of Period.
//   - A tick does nothing until the container is running, and nothing while
//     fewer than InitialDelay whole seconds have passed since the
//     container's State.Running.StartedAt (int32(seconds elapsed) <
//     initialDelaySeconds: the probe is skipped, not delayed). The first
//     probe is therefore the first tick at or after StartedAt+InitialDelay.
//   - Readiness and liveness probes are skipped until the container is
//     started (its startup probe has succeeded, or it has none); a startup
//     probe stops once the container is started.
//   - When the kubelet computes a status in which a started container is not
//     yet known ready, it triggers the readiness worker at once and restarts
//     its ticker from that moment (manualTriggerCh).
//   - Timeout bounds each attempt (HTTP client timeout, dial timeout,
//     ExecSync timeout).
//   - An attempt that errored is retried up to MaxProbeRetries times at
//     once (Retry); if it still errors its result is thrown away.
//   - SuccessThreshold / FailureThreshold: see Tracker.
type Spec struct {
	// InitialDelay is initialDelaySeconds.
	InitialDelay time.Duration
	// Period is periodSeconds (default 10 s).
	Period time.Duration
	// Timeout is timeoutSeconds (default 1 s).
	Timeout time.Duration
	// SuccessThreshold is successThreshold (default 1; the API requires 1
	// for liveness and startup probes).
	SuccessThreshold int32
	// FailureThreshold is failureThreshold (default 3).
	FailureThreshold int32
}

// Timing returns p's effective timing: its fields, with the API defaults
// (SetDefaults_Probe, pkg/apis/core/v1/defaults.go) in place of zeros:
// period 10 s, timeout 1 s, success threshold 1, failure threshold 3. A nil
// probe gets all defaults.
func Timing(p *corev1.Probe) Spec {
	s := Spec{
		Period:           DefaultPeriod,
		Timeout:          DefaultTimeout,
		SuccessThreshold: DefaultSuccessThreshold,
		FailureThreshold: DefaultFailureThreshold,
	}
	if p == nil {
		return s
	}
	s.InitialDelay = time.Duration(p.InitialDelaySeconds) * time.Second
	if p.PeriodSeconds != 0 {
		s.Period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds != 0 {
		s.Timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold != 0 {
		s.SuccessThreshold = p.SuccessThreshold
	}
	if p.FailureThreshold != 0 {
		s.FailureThreshold = p.FailureThreshold
	}
	return s
}

// PastInitialDelay reports whether a worker tick at now may probe a
// container that started running at startedAt: the kubelet skips the probe
// while int32(now-startedAt in seconds) < initialDelaySeconds
// (pkg/kubelet/prober/worker.go doProbe).
func (s Spec) PastInitialDelay(startedAt, now time.Time) bool {
	return int32(now.Sub(startedAt).Seconds()) >= int32(s.InitialDelay/time.Second)
}

// InitialValue is the result a worker stores for a new container before any
// probe ran (newWorker in pkg/kubelet/prober/worker.go): Failure for
// readiness (not ready), Success for liveness, Unknown for startup (not
// started). It returns "" for an unknown kind.
func InitialValue(kind string) Outcome {
	switch kind {
	case KindReadiness:
		return Failure
	case KindLiveness:
		return Success
	case KindStartup:
		return Unknown
	}
	return ""
}

// Tracker reproduces one probe worker's threshold bookkeeping
// (lastResult, resultRun and onHold in pkg/kubelet/prober/worker.go doProbe).
// Use NewTracker; the zero value has no thresholds.
type Tracker struct {
	kind   string
	spec   Spec
	last   Outcome
	run    int
	onHold bool
}

// NewTracker returns a Tracker for a probe of kind (KindStartup,
// KindReadiness, KindLiveness) with timing spec.
func NewTracker(kind string, spec Spec) *Tracker {
	return &Tracker{kind: kind, spec: spec}
}

// Observe feeds one probe result to the tracker, as doProbe handles what
// prober.probe returned, and returns the result the worker stores and
// whether it stores it now:
//
//   - While the tracker is on hold nothing is counted ("", false); the
//     kubelet does not even probe then.
//   - An errored result (r.Err set) is thrown away: not counted, the run is
//     not broken ("", false).
//   - Success and Warning count as Success; Failure and Unknown as Failure.
//   - The same result as last time extends the run, another starts a run of
//     1. The result is stored only once the run reaches the threshold
//     (FailureThreshold for Failure, SuccessThreshold for Success), and again
//     on every further probe of the same run; below it the stored result is
//     left as it was. So with the defaults a readiness probe flips to not
//     ready after 3 failures in a row and back to ready after 1 success.
//   - Once a liveness Failure, or any startup result, is stored the worker
//     goes on hold (liveness: the container will be restarted; startup: the
//     container has started or will be restarted) and its run is reset,
//     until NewContainer.
func (t *Tracker) Observe(r Result) (Outcome, bool) {
	if t.onHold || r.Err != nil {
		return "", false
	}
	result := Failure
	if r.Outcome.Passed() {
		result = Success
	}
	if t.last == result {
		t.run++
	} else {
		t.last, t.run = result, 1
	}
	if (result == Failure && t.run < int(t.spec.FailureThreshold)) ||
		(result == Success && t.run < int(t.spec.SuccessThreshold)) {
		return result, false
	}
	if (t.kind == KindLiveness && result == Failure) || t.kind == KindStartup {
		t.onHold, t.run = true, 0
	}
	return result, true
}

// OnHold reports whether the worker has stopped probing until the container
// is replaced.
func (t *Tracker) OnHold() bool { return t.onHold }

// NewContainer tells the tracker the probed container was replaced (a new
// container ID): the kubelet stores InitialValue again and resumes probing.
// As in the kubelet, the last result and its run are kept.
func (t *Tracker) NewContainer() { t.onHold = false }
