package probe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeCode, fakeStatus and fakeGRPCError mimic a gRPC status error
// (GRPCStatus() *status.Status, (*Status).Code() codes.Code) without gRPC.
type fakeCode uint32

type fakeStatus struct{ code fakeCode }

func (s *fakeStatus) Code() fakeCode { return s.code }

type fakeGRPCError struct {
	s   *fakeStatus
	msg string
}

func (e *fakeGRPCError) Error() string           { return e.msg }
func (e *fakeGRPCError) GRPCStatus() *fakeStatus { return e.s }

// fakeExec answers every call with the given values and records the timeout.
func fakeExec(stdout, stderr string, code int32, err error, gotTimeout *time.Duration) ExecFunc {
	return func(_ context.Context, _ []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		if gotTimeout != nil {
			*gotTimeout = timeout
		}
		return []byte(stdout), []byte(stderr), code, err
	}
}

func TestExec(t *testing.T) {
	deadline := &fakeGRPCError{s: &fakeStatus{code: 4}, msg: "rpc error: code = DeadlineExceeded desc = timeout 1s exceeded"}
	notFound := &fakeGRPCError{s: &fakeStatus{code: 5}, msg: "rpc error: code = NotFound desc = container not found"}
	cmd := []string{"sh", "-c", "cat /tmp/ready"}
	timedOut := `command timed out: "sh -c cat /tmp/ready" timed out after 1s`

	tests := []struct {
		name     string
		run      ExecFunc
		outcome  Outcome
		output   string
		exitCode int32
		err      string
		event    string
	}{
		{name: "exit 0", run: fakeExec("out\n", "warn\n", 0, nil, nil), outcome: Success, output: "out\nwarn\n"},
		{name: "exit 1 with output", run: fakeExec("", "cat: can't open '/tmp/ready'\n", 1, nil, nil),
			outcome: Failure, output: "cat: can't open '/tmp/ready'\n", exitCode: 1,
			event: "Readiness probe failed: cat: can't open '/tmp/ready'\n"},
		{name: "exit 2 silent", run: fakeExec("", "", 2, nil, nil), outcome: Failure, exitCode: 2,
			event: "Readiness probe failed: "},
		{name: "gRPC DeadlineExceeded", run: fakeExec("", "", 0, fmt.Errorf("ExecSync: %w", deadline), nil),
			outcome: Failure, output: timedOut, event: "Readiness probe failed: " + timedOut},
		{name: "context deadline", run: fakeExec("", "", 0, context.DeadlineExceeded, nil),
			outcome: Failure, output: timedOut},
		{name: "already a cri-client timeout", run: fakeExec("", "", 0, fmt.Errorf("%w: %q timed out after %s", ErrCommandTimedOut, "x", time.Second), nil),
			outcome: Failure, output: `command timed out: "x" timed out after 1s`},
		{name: "runtime error", run: fakeExec("", "", 0, notFound, nil),
			outcome: Unknown, err: notFound.msg,
			event: "Readiness probe errored and resulted in unknown state: rpc error: code = NotFound desc = container not found"},
		{name: "plain error", run: fakeExec("ignored", "", 0, errors.New("boom"), nil),
			outcome: Unknown, err: "boom", event: "Readiness probe errored and resulted in unknown state: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Exec(context.Background(), tc.run, &corev1.ExecAction{Command: cmd}, time.Second)
			gotErr := ""
			if r.Err != nil {
				gotErr = r.Err.Error()
			}
			if r.Outcome != tc.outcome || r.Output != tc.output || r.ExitCode != tc.exitCode || gotErr != tc.err {
				t.Errorf("got %q %q exit %d err %q, want %q %q exit %d err %q",
					r.Outcome, r.Output, r.ExitCode, gotErr, tc.outcome, tc.output, tc.exitCode, tc.err)
			}
			if r.Target != "sh -c cat /tmp/ready" {
				t.Errorf("target %q", r.Target)
			}
			if tc.event != "" {
				if got := EventMessage(KindReadiness, r); got != tc.event {
					t.Errorf("event %q, want %q", got, tc.event)
				}
			}
		})
	}
}

func TestExecPassesTimeoutAndCutsOutput(t *testing.T) {
	var got time.Duration
	big := strings.Repeat("o", 8*1024)
	r := Exec(context.Background(), fakeExec(big, big, 0, nil, &got), &corev1.ExecAction{Command: []string{"x"}}, 3*time.Second)
	if got != 3*time.Second {
		t.Errorf("ExecSync timeout %v, want 3s", got)
	}
	if len(r.Output) != MaxBodyLength {
		t.Errorf("output length %d, want %d", len(r.Output), MaxBodyLength)
	}
}

func TestExpandCommand(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{}},
		{Name: "DUP", Value: "first"},
		{Name: "DUP", Value: "last"},
	}
	// The escaping rules are tested once, in internal/expansion; these are
	// the env rules of ExpandContainerCommandOnlyStatic.
	tests := []struct{ in, want string }{
		{"curl localhost:$(PORT)/", "curl localhost:8080/"},
		{"$(MISSING)", "$(MISSING)"},
		{"$(SECRET)x", "x"},
		{"$(DUP)", "last"},
	}
	for _, tc := range tests {
		got := ExpandCommand([]string{tc.in}, env)
		if !reflect.DeepEqual(got, []string{tc.want}) {
			t.Errorf("ExpandCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := ExpandCommand(nil, env); got != nil {
		t.Errorf("ExpandCommand(nil) = %q", got)
	}
}
