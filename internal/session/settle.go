package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// PodName is the engine's pod as namespace/name.
func PodName(eng *steps.Engine) string {
	return eng.Pod().Namespace + "/" + eng.Pod().Name
}

// Summarize is a run's summary once creation is over, for every frontend:
// the pod as it is now and the creation's timing, created being the time
// creation took (the wall time for --auto; the steps' own time in the TUI,
// where the user's pauses do not count). Settle adds the outcome and the
// teardown.
func Summarize(eng *steps.Engine, calls []cri.Call, created time.Duration, kept bool) report.Summary {
	snap := eng.PodState()
	ran, calls := creation(eng.StepsAsRun(), calls)
	return report.Summary{Pod: PodName(eng), UID: string(eng.Pod().UID), Display: snap.Display, Ready: snap.Ready,
		Restarts: snap.Restarts, PodIP: snap.Status.PodIP, Status: snap.Status, Events: snap.Events, Kept: kept,
		Timing: Timing(ran, calls, created), RestsOn: steps.RestsOn(ran), NotReady: notReady(eng.Pod(), snap.Status, ran)}
}

// creation is the creation's steps and calls of all and calls: the TUI
// may have stepped (some of) the teardown before Summarize, whose steps
// and calls are the teardown's time, not the creation's.
func creation(all []steps.Step, calls []cri.Call) ([]steps.Step, []cri.Call) {
	down := map[int]bool{}
	n := 0
	for _, s := range all {
		if s.Stage != steps.StageTeardown {
			all[n] = s
			n++
			continue
		}
		for _, c := range s.Calls {
			down[c.Seq] = true
		}
	}
	if len(down) == 0 {
		return all[:n], calls
	}
	kept := make([]cri.Call, 0, len(calls))
	for _, c := range calls {
		if !down[c.Seq] {
			kept = append(kept, c)
		}
	}
	return all[:n], kept
}

// notReady is the running containers (and started sidecars) whose
// readiness probe has not passed, nil when none: a pod that ends Running
// but not Ready says why, and that --wait-ready waits for it.
func notReady(pod *corev1.Pod, st corev1.PodStatus, ran []steps.Step) *report.NotReady {
	probed := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe != nil {
			probed[c.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.ReadinessProbe != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			probed[c.Name] = true
		}
	}
	var names []string
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if probed[cs.Name] && !cs.Ready && cs.State.Running != nil {
				names = append(names, cs.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	waited := false
	for _, s := range ran {
		if s.Kind == steps.KindReady {
			waited = true
		}
	}
	return &report.NotReady{Containers: names, Waited: waited, Message: report.NotReadyMessage(names, waited)}
}

// Timing splits the creation wall time into time in CRI calls (every call
// of the run), time spent deliberately waiting (steps.Kind.Split), and
// podstep's own overhead (the rest).
func Timing(all []steps.Step, calls []cri.Call, wall time.Duration) report.Timing {
	var inCRI, waiting time.Duration
	for _, c := range calls {
		inCRI += c.Duration
	}
	for _, s := range all {
		var in time.Duration
		for _, c := range s.Calls {
			in += c.Duration
		}
		_, w, _ := s.Kind.Split(s.Duration, in)
		waiting += w
	}
	return report.Timing{CreateMs: ms(wall), CRIMs: ms(inCRI), WaitMs: ms(waiting), OverheadMs: ms(wall - inCRI - waiting), Calls: len(calls)}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TeardownBudget leaves time for every StopContainer's grace period.
func TeardownBudget(eng *steps.Engine) time.Duration {
	return 5*time.Minute + time.Duration(len(eng.Pod().Spec.Containers)+len(eng.Pod().Spec.InitContainers))*time.Minute
}

// Settle ends a run, for every frontend: it tears the pod down (unless
// kept, within TeardownBudget), then fills in the summary's outcome and
// what is left (Outcome), and returns the exit code and the line for
// stderr after the summary ("" for none).
func Settle(ctx context.Context, eng *steps.Engine, sum *report.Summary, teardown, interrupted bool, stderr io.Writer) (int, string) {
	if teardown {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TeardownBudget(eng))
		// The TUI may have stepped some of the teardown already
		// (tui.Run): their time counts, and the rest runs now.
		var stepped time.Duration
		for _, s := range eng.StepsAsRun() {
			if s.Stage == steps.StageTeardown && (s.State == steps.Done || s.State == steps.Failed) {
				stepped += s.Duration
			}
		}
		start := time.Now()
		err := eng.Teardown(tctx)
		cancel()
		sum.Timing.TeardownMs = ms(stepped + time.Since(start))
		if err != nil {
			fmt.Fprintln(stderr, "podstep: teardown:", err)
		}
	}
	r := Result{Steps: eng.StepsAsRun(), Finished: eng.Finished(), Interrupted: interrupted}
	if f, failed := eng.Failed(); failed {
		r.Failed = &f
	}
	if teardown {
		r.Left = eng.LeftBehind()
	}
	return Outcome(r, sum)
}

// Result is what the outcome policy (Outcome) reads of a run once it is
// over: plain data, so that the policy is tested without a runtime.
type Result struct {
	Steps       []steps.Step
	Failed      *steps.Step // the step the pod failed at (engine.Failed), or nil
	Finished    bool        // creation ran to its end
	Interrupted bool        // a signal (or a gone stdout) stopped the run
	Left        steps.LeftBehind
}

// Outcome is the outcome and exit-code policy of every frontend: it fills
// in sum's Outcome, Failed, Leftover and ExitCode from r and returns the
// exit code and the line for stderr ("" for none). The exit code says first
// what needs the user: the runtime went away (3), then something is left
// behind (4), then an interrupt (130), then how the pod did (1 or 0).
// "torn down" is said only when nothing is left.
func Outcome(r Result, sum *report.Summary) (int, string) {
	code := ExitOK
	sum.Outcome = "running"
	switch {
	case r.Failed != nil && cancelled(r.Failed.Result.Err):
		// The step was cut short by podstep's own cancellation (a signal, a
		// reader of stdout that went away): the run stopped, the pod did
		// not fail, and the runtime is not gone.
		sum.Outcome = "stopped"
	case r.Failed != nil:
		f := r.Failed
		code = ExitPodFailed
		sum.Outcome = "failed"
		sum.Failed = &report.Failure{Stage: f.Stage, Step: f.Name, Reason: f.Result.Reason, Message: f.Result.Message, Explanation: f.Result.Explanation}
		if f.Result.Reason == reason.RuntimeUnavailable {
			code = ExitRuntime
		}
	case !r.Finished:
		sum.Outcome = "stopped"
	case sum.Status.Phase == corev1.PodSucceeded:
		// Every container completed and none is restarted (restartPolicy
		// Never or OnFailure): a finished pod, not a failure.
		sum.Outcome = "succeeded"
	}
	left := r.Left
	if !left.Empty() {
		sum.Leftover = &left
	}
	if gone, ok := runtimeGone(r.Steps); ok {
		sum.ExitCode, sum.Outcome, sum.Failed = ExitRuntime, "failed", gone
		msg := fmt.Sprintf("podstep: the runtime went away during %s: %s", gone.Step, gone.Message)
		if !left.Empty() {
			msg += fmt.Sprintf("; left: %s; once the runtime is back, run `podstep cleanup` to remove it", left)
		}
		return ExitRuntime, msg
	}
	if !left.Empty() {
		return leftBehind(r, sum)
	}
	msg := ""
	if r.Interrupted {
		code = ExitInterrupted
		sum.Outcome = "interrupted"
		sum.Failed = nil
		msg = "podstep: interrupted: torn down"
	}
	sum.ExitCode = code
	return code, msg
}

// leftBehind is Outcome when teardown did not finish.
func leftBehind(r Result, sum *report.Summary) (int, string) {
	var broken []string
	for _, s := range r.Steps {
		if s.Stage == steps.StageTeardown && s.State == steps.Failed {
			broken = append(broken, s.Name+": "+s.Result.Message)
		}
	}
	why := strings.Join(broken, "; ")
	if why == "" {
		why = "not finished"
	}
	if sum.Failed == nil || r.Interrupted {
		sum.Failed = &report.Failure{Stage: steps.StageTeardown, Step: firstWord(broken), Reason: reason.TeardownFailed,
			Message: why + " (run `podstep cleanup`)"}
	}
	prefix := "podstep: "
	if r.Interrupted {
		sum.Outcome = "interrupted"
		prefix += "interrupted: "
	} else {
		sum.Outcome = "failed"
	}
	sum.ExitCode = ExitLeftBehind
	return ExitLeftBehind, fmt.Sprintf("%steardown did not finish (%s); left: %s; run `podstep cleanup` to remove it", prefix, why, r.Left)
}

// runtimeGone finds the first step in which the runtime stopped answering
// (a CRI call failed with gRPC Unavailable: its socket refused or dropped
// the connection). A CSI driver's calls are not the runtime's.
func runtimeGone(all []steps.Step) (*report.Failure, bool) {
	for _, s := range all {
		for _, c := range s.Calls {
			if cri.Unavailable(c.Err) && cri.IsCRI(c.Method) {
				return &report.Failure{Stage: s.Stage, Step: s.Name, Reason: reason.RuntimeUnavailable,
					Message: fmt.Sprintf("%s: %s", c.Method, c.ErrorMessage())}, true
			}
		}
	}
	return nil, false
}

// cancelled reports whether err is a call cut short by the run's own
// context (gRPC's Canceled, or the context's error itself).
func cancelled(err error) bool {
	return err != nil && (errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled)
}

// firstWord is the step name of the first "name: message", or "".
func firstWord(broken []string) string {
	if len(broken) == 0 {
		return ""
	}
	return strings.SplitN(broken[0], ":", 2)[0]
}
