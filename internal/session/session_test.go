package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// TestOutcome is the outcome and exit-code policy of every frontend,
// without a runtime: what needs the user comes first.
func TestOutcome(t *testing.T) {
	failedPull := steps.Step{Stage: steps.StageContainers, Name: "pull/app", State: steps.Failed,
		Result: steps.Result{Reason: "ErrImagePull", Message: "not found"}}
	failedStop := steps.Step{Stage: steps.StageTeardown, Name: "stop-containers", State: steps.Failed,
		Result: steps.Result{Message: "deadline exceeded"}}
	gone := steps.Step{Stage: steps.StageContainers, Name: "start/app", State: steps.Failed,
		Result: steps.Result{Reason: reason.RuntimeUnavailable, Message: "gone"},
		Calls:  []cri.Call{{Method: "StartContainer", Err: status.Error(codes.Unavailable, "connection refused")}}}
	cut := steps.Step{Stage: steps.StageSandbox, Name: "runtime-status", State: steps.Failed,
		Result: steps.Result{Reason: reason.RuntimeUnavailable, Message: "canceled", Err: status.Error(codes.Canceled, "context canceled")}}
	left := steps.LeftBehind{Sandbox: "abc"}
	for _, tc := range []struct {
		name    string
		r       Result
		phase   corev1.PodPhase
		code    int
		outcome string
		failed  string // sum.Failed.Step, "" for none
		msg     string // a part of the stderr line, "" for none
	}{
		{"running", Result{Finished: true}, corev1.PodRunning, ExitOK, "running", "", ""},
		{"succeeded", Result{Finished: true}, corev1.PodSucceeded, ExitOK, "succeeded", "", ""},
		{"stopped at a breakpoint", Result{}, corev1.PodPending, ExitOK, "stopped", "", ""},
		{"pod failed", Result{Steps: []steps.Step{failedPull}, Failed: &failedPull}, "", ExitPodFailed, "failed", "pull/app", ""},
		{"interrupted, torn down", Result{Interrupted: true}, "", ExitInterrupted, "interrupted", "", "interrupted: torn down"},
		{"interrupted after a failure", Result{Steps: []steps.Step{failedPull}, Failed: &failedPull, Interrupted: true}, "", ExitInterrupted, "interrupted", "", "interrupted: torn down"},
		{"left behind", Result{Steps: []steps.Step{failedStop}, Finished: true, Left: left}, "", ExitLeftBehind, "failed", "stop-containers", "teardown did not finish (stop-containers: deadline exceeded)"},
		{"left behind after a failure keeps the failure", Result{Steps: []steps.Step{failedPull, failedStop}, Failed: &failedPull, Left: left}, "", ExitLeftBehind, "failed", "pull/app", "left: "},
		{"interrupted and left behind", Result{Interrupted: true, Left: left}, "", ExitLeftBehind, "interrupted", "", "interrupted: teardown did not finish (not finished)"},
		{"a step cut short by the run's own cancellation (stdout gone)", Result{Steps: []steps.Step{cut}, Failed: &cut}, "", ExitOK, "stopped", "", ""},
		{"a step cut short by an interrupt", Result{Steps: []steps.Step{cut}, Failed: &cut, Interrupted: true}, "", ExitInterrupted, "interrupted", "", "interrupted: torn down"},
		{"runtime gone", Result{Steps: []steps.Step{gone}, Failed: &gone}, "", ExitRuntime, "failed", "start/app", "the runtime went away during start/app"},
		{"runtime gone beats left behind", Result{Steps: []steps.Step{gone, failedStop}, Failed: &gone, Left: left, Interrupted: true}, "", ExitRuntime, "failed", "start/app", "once the runtime is back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := report.Summary{Status: corev1.PodStatus{Phase: tc.phase}}
			code, msg := Outcome(tc.r, &sum)
			if code != tc.code || sum.ExitCode != tc.code || sum.Outcome != tc.outcome {
				t.Errorf("code %d (summary %d), outcome %q; want %d, %q", code, sum.ExitCode, sum.Outcome, tc.code, tc.outcome)
			}
			got := ""
			if sum.Failed != nil {
				got = sum.Failed.Step
			}
			if got != tc.failed {
				t.Errorf("failed step %q, want %q", got, tc.failed)
			}
			if (tc.msg == "") != (msg == "") || !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q, want one with %q", msg, tc.msg)
			}
			if (sum.Leftover != nil) != !tc.r.Left.Empty() {
				t.Errorf("leftover %v, want %v", sum.Leftover, tc.r.Left)
			}
		})
	}
}

func TestWorst(t *testing.T) {
	for _, tc := range []struct {
		codes       []int
		interrupted bool
		want        int
	}{
		{nil, false, ExitOK},
		{[]int{0, 0}, false, ExitOK},
		{[]int{0, 1}, false, ExitPodFailed},
		{[]int{1}, true, ExitInterrupted},
		{[]int{1, 130}, false, ExitInterrupted},
		{[]int{130, 4, 1}, false, ExitLeftBehind},
		{[]int{4, 3}, true, ExitRuntime},
	} {
		if got := Worst(tc.codes, tc.interrupted); got != tc.want {
			t.Errorf("Worst(%v, %t) = %d, want %d", tc.codes, tc.interrupted, got, tc.want)
		}
	}
}

// TestCode checks that Code (the trace's exit code) and Print (the
// process's) agree, and what Print says.
func TestCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		said string
	}{
		{"nil", nil, ExitOK, ""},
		{"usage", Usagef("--x %d: bad", 1), ExitUsage, "error: --x 1: bad\n"},
		{"wrapped runtime", fmt.Errorf("run: %w", RuntimeErr(errors.New("down"))), ExitRuntime, "error: down\n"}, // the code's own error is said
		{"silent", Silent(ExitPodFailed), ExitPodFailed, ""},
		{"manifest", &manifest.Error{File: "p.yaml", Field: "spec", Msg: "bad"}, ExitUsage, "error: "},
		{"cobra's own", errors.New("unknown flag: --x"), ExitUsage, "error: unknown flag: --x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if got := Print(tc.err, &b); got != tc.code {
				t.Errorf("Print = %d, want %d", got, tc.code)
			}
			if got := Code(tc.err); got != tc.code {
				t.Errorf("Code = %d, want %d", got, tc.code)
			}
			if !strings.HasPrefix(b.String(), tc.said) || (tc.said == "") != (b.Len() == 0) {
				t.Errorf("said %q, want %q", b.String(), tc.said)
			}
		})
	}
}

func TestCheckOutput(t *testing.T) {
	if err := CheckOutput("json", "text", "json"); err != nil {
		t.Errorf("json: %v", err)
	}
	for _, tc := range []struct {
		allowed []string
		want    string
	}{
		{[]string{"yaml", "json"}, `-o/--output "x": expected yaml or json`},
		{[]string{"text", "short", "json"}, `-o/--output "x": expected text, short or json`},
	} {
		err := CheckOutput("x", tc.allowed...)
		if err == nil || err.Error() != tc.want || Code(err) != ExitUsage {
			t.Errorf("CheckOutput(x, %v) = %v, want %q (exit 2)", tc.allowed, err, tc.want)
		}
	}
}

// TestValidate: every command that runs or plans a pod refuses the same
// settings (plan passed a bogus --cgroup-driver, a negative --settle).
func TestValidate(t *testing.T) {
	good := func() Options {
		return Options{File: "p.yaml", CgroupDriver: "cgroupfs", BackoffScale: 1, MaxRestarts: 3, Settle: time.Second}
	}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string // "" valid
	}{
		{"good", func(*Options) {}, ""},
		{"no file", func(o *Options) { o.File = "" }, "-f/--filename is required"},
		{"cgroup driver", func(o *Options) { o.CgroupDriver = "bogus" }, `--cgroup-driver "bogus"`},
		{"settle", func(o *Options) { o.Settle = -time.Second }, "--settle -1s"},
		{"break", func(o *Options) { o.Breaks = []string{"nope"} }, `--break "nope": expected a stage (admit`},
		{"gates", func(o *Options) { o.FeatureGates = "Nope=true" }, "--feature-gates"},
		{"backoff", func(o *Options) { o.BackoffScale = 2 }, "--backoff-scale 2"},
		{"restarts", func(o *Options) { o.MaxRestarts = -2 }, "--max-restarts -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good()
			tc.edit(&o)
			err := o.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || Code(err) != ExitUsage {
				t.Errorf("got %v, want %q (exit 2)", err, tc.want)
			}
		})
	}
}

// TestChoose: the one endpoint choice refuses a bad or self-referring
// endpoint before probing, and says where an unreachable one came from.
func TestChoose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		named []Named
		avoid string
		code  int
		want  string
	}{
		{"bad", []Named{{"http://x", "--upstream"}}, "", ExitUsage, "--upstream: "},
		{"itself", []Named{{"unix://" + dir + "/p.sock", "--upstream"}}, "unix://" + dir + "/p.sock", ExitUsage, "is --listen: the proxy would call itself"},
		{"unreachable", []Named{{"", "--upstream"}, {"unix://" + dir + "/none.sock", "--runtime-endpoint"}}, "", ExitRuntime, "(from --runtime-endpoint)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Choose(ctx, tc.named, tc.avoid, time.Second)
			if err == nil || Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v (exit %d), want exit %d with %q", err, Code(err), tc.code, tc.want)
			}
		})
	}
}
