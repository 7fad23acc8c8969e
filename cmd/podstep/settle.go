package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// settle ends a run, for every frontend: it tears the pod down (unless
// kept), then fills in the summary's outcome and what is left, and returns
// the exit code and the line for stderr after the summary ("" for none).
// The exit code says first what needs the user: the runtime went away (3),
// then something is left behind (4), then an interrupt (130), then how the
// pod did (1 or 0). "torn down" is said only when nothing is left.
func settle(ctx context.Context, eng *steps.Engine, sum *report.Summary, teardown, interrupted bool, stderr io.Writer) (int, string) {
	if teardown {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownBudget(eng))
		start := time.Now()
		err := eng.Teardown(tctx)
		cancel()
		sum.Timing.TeardownMs = msSince(start)
		if err != nil {
			fmt.Fprintln(stderr, "podstep: teardown:", err)
		}
	}
	code := ExitOK
	sum.Outcome = "running"
	if f, failed := eng.Failed(); failed {
		code = ExitPodFailed
		sum.Outcome = "failed"
		sum.Failed = &report.Failure{Stage: f.Stage, Step: f.Name, Reason: f.Result.Reason, Message: f.Result.Message}
		if f.Result.Reason == reason.RuntimeUnavailable {
			code = ExitRuntime
		}
	} else if !eng.Finished() {
		sum.Outcome = "stopped"
	} else if sum.Status.Phase == corev1.PodSucceeded {
		// Every container completed and none is restarted (restartPolicy
		// Never or OnFailure): a finished pod, not a failure.
		sum.Outcome = "succeeded"
	}
	var left steps.LeftBehind
	if teardown {
		left = eng.LeftBehind()
	}
	if !left.Empty() {
		sum.Leftover = &left
	}
	if gone, ok := runtimeGone(eng.Steps()); ok {
		sum.ExitCode, sum.Outcome, sum.Failed = ExitRuntime, "failed", gone
		msg := fmt.Sprintf("podstep: the runtime went away during %s: %s", gone.Step, gone.Message)
		if !left.Empty() {
			msg += fmt.Sprintf("; left: %s; once the runtime is back, run `podstep cleanup` to remove it", left)
		}
		return ExitRuntime, msg
	}
	if !left.Empty() {
		var broken []string
		for _, s := range eng.Steps() {
			if s.Stage == steps.StageTeardown && s.State == steps.Failed {
				broken = append(broken, s.Name+": "+s.Result.Message)
			}
		}
		why := strings.Join(broken, "; ")
		if why == "" {
			why = "not finished"
		}
		if sum.Failed == nil || interrupted {
			sum.Failed = &report.Failure{Stage: steps.StageTeardown, Step: firstWord(broken), Reason: reason.TeardownFailed,
				Message: why + " (run `podstep cleanup`)"}
		}
		if interrupted {
			sum.Outcome = "interrupted"
		} else {
			sum.Outcome = "failed"
		}
		sum.ExitCode = ExitLeftBehind
		prefix := "podstep: "
		if interrupted {
			prefix += "interrupted: "
		}
		return ExitLeftBehind, fmt.Sprintf("%steardown did not finish (%s); left: %s; run `podstep cleanup` to remove it", prefix, why, left)
	}
	msg := ""
	if interrupted {
		code = ExitInterrupted
		sum.Outcome = "interrupted"
		sum.Failed = nil
		msg = "podstep: interrupted: torn down"
	}
	sum.ExitCode = code
	return code, msg
}

// runtimeGone finds the first step in which the runtime stopped answering
// (a call failed with gRPC Unavailable: its socket refused or dropped the
// connection).
func runtimeGone(all []steps.Step) (*report.Failure, bool) {
	for _, s := range all {
		for _, c := range s.Calls {
			if cri.Unavailable(c.Err) {
				return &report.Failure{Stage: s.Stage, Step: s.Name, Reason: reason.RuntimeUnavailable,
					Message: fmt.Sprintf("%s: %s", c.Method, c.ErrorMessage())}, true
			}
		}
	}
	return nil, false
}

// firstWord is the step name of the first "name: message", or "".
func firstWord(broken []string) string {
	if len(broken) == 0 {
		return ""
	}
	return strings.SplitN(broken[0], ":", 2)[0]
}
