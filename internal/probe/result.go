package probe

import (
	"fmt"

	"github.com/podstep/podstep/internal/reason"
)

// Outcome is the result of one probe attempt. Its values are spelled as the
// kubelet's probe.Result (pkg/probe/probe.go), because the kubelet prints
// them in the "errored and resulted in <outcome> state" event.
type Outcome string

const (
	// Success: the probe passed.
	Success Outcome = "success"
	// Warning is logically a success with extra information attached; the
	// HTTP probe returns it when it stopped at a redirect to another host
	// (pkg/probe/http/http.go). The kubelet counts it as a success and
	// records a ProbeWarning event (pkg/kubelet/prober/prober.go).
	Warning Outcome = "warning"
	// Failure: the probe ran and failed.
	Failure Outcome = "failure"
	// Unknown: the probe could not be run (bad port, runtime error).
	Unknown Outcome = "unknown"
)

// Passed reports whether the kubelet counts the outcome as a success
// (Success or Warning; pkg/kubelet/prober/prober.go maps probe.Warning to
// results.Success).
func (o Outcome) Passed() bool { return o == Success || o == Warning }

// Probe kinds, spelled as the kubelet's probeType.String()
// (pkg/kubelet/prober/prober_manager.go); they start the event messages.
const (
	// KindStartup is a startupProbe.
	KindStartup = "Startup"
	// KindReadiness is a readinessProbe.
	KindReadiness = "Readiness"
	// KindLiveness is a livenessProbe.
	KindLiveness = "Liveness"
)

// Result is what one probe attempt produced.
type Result struct {
	// Outcome is the probe.Result the kubelet's prober would get.
	Outcome Outcome
	// Output is the prober's output string: what the kubelet puts after
	// "Readiness probe failed: " (Failure) or "Readiness probe warning: "
	// (Warning). For a Success it is the response body or command output.
	Output string
	// Code is the HTTP status code of the response, 0 when none arrived.
	Code int
	// ExitCode is the exec probe command's exit code (0 when not an exec
	// probe or when the command did not run to completion).
	ExitCode int32
	// Target is what was probed, for display: the URL, host:port or command.
	Target string
	// Err is set when the probe errored rather than failed (the kubelet's
	// prober got a non-nil error: port not resolvable, runtime error, HTTP
	// body read error). The kubelet retries such an attempt (Retry), then
	// records "<Kind> probe errored and resulted in <outcome> state: <Err>"
	// and throws the result away (it does not count towards thresholds).
	Err error
}

// EventReason returns the reason of the event the kubelet records for r
// (pkg/kubelet/prober/prober.go): reason.ContainerUnhealthy for an errored or
// failed probe, reason.ContainerProbeWarning for a Warning, "" when no event is recorded
// (Success, or Unknown without an error). The event type is always Warning.
func EventReason(r Result) string {
	switch {
	case r.Err != nil:
		return reason.ContainerUnhealthy
	case r.Outcome == Failure:
		return reason.ContainerUnhealthy
	case r.Outcome == Warning:
		return reason.ContainerProbeWarning
	}
	return ""
}

// EventMessage returns the message of the event the kubelet records for r,
// kind being KindStartup, KindReadiness or KindLiveness. The formats are
// those of pkg/kubelet/prober/prober.go (prober.probe):
//
//	errored: "%s probe errored and resulted in %s state: %s" (kind, outcome, err)
//	Failure: "%s probe failed: %s"  (kind, output)
//	Warning: "%s probe warning: %s" (kind, output)
//
// It returns "" when the kubelet records no event (Success, Unknown without
// an error).
func EventMessage(kind string, r Result) string {
	switch {
	case r.Err != nil:
		return fmt.Sprintf("%s probe errored and resulted in %s state: %s", kind, r.Outcome, r.Err)
	case r.Outcome == Failure:
		return fmt.Sprintf("%s probe failed: %s", kind, r.Output)
	case r.Outcome == Warning:
		return fmt.Sprintf("%s probe warning: %s", kind, r.Output)
	}
	return ""
}

// MaxProbeRetries is how many times the kubelet runs a probe attempt that
// errored before giving up (maxProbeRetries, pkg/kubelet/prober/prober.go).
const MaxProbeRetries = 3

// Retry runs attempt up to retries times, as the kubelet's
// runProbeWithRetries (pkg/kubelet/prober/prober.go) does: it returns the
// first result without an error, or the last one. Only errored attempts are
// retried; a Failure is returned at once.
func Retry(retries int, attempt func() Result) Result {
	var r Result
	for i := 0; i < retries; i++ {
		r = attempt()
		if r.Err == nil {
			return r
		}
	}
	return r
}
