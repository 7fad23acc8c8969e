package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// settle ends a run, for every frontend: it tears the pod down (unless
// kept), then fills in the summary's outcome and returns the exit code.
// A failed teardown fails the run: something may be left behind.
func settle(ctx context.Context, eng *steps.Engine, sum *report.Summary, teardown, interrupted bool, stderr io.Writer) int {
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
		if f.Result.Reason == "RuntimeUnavailable" {
			code = ExitRuntime
		}
	} else if !eng.Finished() {
		sum.Outcome = "stopped"
	} else if sum.Status.Phase == corev1.PodSucceeded {
		// Every container completed and none is restarted (restartPolicy
		// Never or OnFailure): a finished pod, not a failure.
		sum.Outcome = "succeeded"
	}
	var broken []string
	for _, s := range eng.Steps() {
		if s.Stage == steps.StageTeardown && s.State == steps.Failed {
			broken = append(broken, s.Name+": "+s.Result.Message)
		}
	}
	if len(broken) > 0 && code == ExitOK {
		code = ExitPodFailed
		sum.Outcome = "failed"
		sum.Failed = &report.Failure{Stage: steps.StageTeardown, Step: strings.SplitN(broken[0], ":", 2)[0],
			Reason: "TeardownFailed", Message: strings.Join(broken, "; ") + " (run `podstep cleanup`)"}
	}
	if interrupted {
		code = ExitInterrupted
		sum.Outcome = "interrupted"
		sum.Failed = nil
	}
	sum.ExitCode = code
	return code
}
