package steps

import "time"

// The kubelet's back-off bounds for restarting containers and for pulling
// images: the first delay is 10 s and each next one doubles up to 5 min
// (backOffPeriod and MaxContainerBackOff in pkg/kubelet/kubelet.go, used for
// both the container back-off and the image pull back-off). The alpha
// feature gates ReduceDefaultCrashLoopBackOffDecay and
// KubeletCrashLoopBackOffMax change them; podstep models the defaults.
const (
	initialBackOff = 10 * time.Second
	maxBackOff     = 300 * time.Second
)

// backOff is one entry of the kubelet's flowcontrol.Backoff
// (k8s.io/client-go/util/flowcontrol/backoff.go): the current delay of one
// key and when it last moved.
type backOff struct {
	delay      time.Duration
	lastUpdate time.Time
}

// expired says the entry is stale at now: it last moved more than twice the
// maximum delay ago, so the next failure starts again from the first delay
// (hasExpired in flowcontrol).
func (b *backOff) expired(now time.Time) bool {
	return b == nil || now.Sub(b.lastUpdate) > 2*maxBackOff
}

// inBackOffSince says whether a container that finished at finished is still
// in its back-off window at now (Backoff.IsInBackOffSince): the kubelet's
// doBackOff uses the finish time of the last exited container.
func (b *backOff) inBackOffSince(finished, now time.Time) bool {
	if b.expired(now) {
		return false
	}
	return now.Sub(finished) < b.delay
}

// inBackOffSinceUpdate says whether now is within the delay since the last
// failure (Backoff.IsInBackOffSinceUpdate, used by the image manager).
func (b *backOff) inBackOffSinceUpdate(now time.Time) bool {
	if b.expired(now) {
		return false
	}
	return now.Sub(b.lastUpdate) < b.delay
}

// next moves the entry on at now (Backoff.Next): the first delay for a new
// or stale entry, else twice the last one, capped. The kubelet adds no
// jitter to these two back-offs.
func (b *backOff) next(now time.Time) *backOff {
	if b.expired(now) {
		return &backOff{delay: initialBackOff, lastUpdate: now}
	}
	d := 2 * b.delay
	if d > maxBackOff {
		d = maxBackOff
	}
	return &backOff{delay: d, lastUpdate: now}
}

// scaled is d shortened by --backoff-scale, for the time podstep really waits.
func (e *Engine) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.opts.BackoffScale)
}
