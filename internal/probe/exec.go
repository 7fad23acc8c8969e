package probe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/expansion"
)

// ExecFunc runs cmd in the container, as CRI ExecSync does; the caller wraps
// its CRI client. timeout is the ExecSync timeout (the kubelet sends
// int64(timeout.Seconds()) and gives the gRPC call runtimeRequestTimeout,
// 2 minutes by default, plus timeout; 0 means none). exitCode is the command's exit
// code when the call succeeded; err is for calls that did not complete. A
// runtime-side timeout should come back as the runtime's gRPC
// DeadlineExceeded error as is, or as an error wrapping ErrCommandTimedOut or
// context.DeadlineExceeded.
type ExecFunc func(ctx context.Context, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)

// ErrCommandTimedOut is the cri-client's error for an ExecSync the runtime
// answered with DeadlineExceeded
// (staging/src/k8s.io/cri-client/pkg/remote_runtime.go); its text starts the
// exec probe's timeout output.
var ErrCommandTimedOut = errors.New("command timed out")

// ExitError is the error the kubelet's CRI client makes of an ExecSync that
// returned a non-zero exit code (utilexec.CodeExitError built in
// staging/src/k8s.io/cri-client/pkg/remote_runtime.go execSyncV1). Its text,
// "command '<cmd joined by spaces>' exited with <code>: <stderr>", is what
// an exec lifecycle hook's failure message shows as the error.
type ExitError struct {
	// Cmd is the command that ran.
	Cmd []string
	// Code is its exit code.
	Code int32
	// Stderr is what it wrote on stderr.
	Stderr []byte
}

// Error returns the cri-client's text for a non-zero exit.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// combinedOutput is what the kubelet's RunInContainer returns: stdout then
// stderr, not interleaved (kuberuntime_container.go RunInContainer).
func combinedOutput(stdout, stderr []byte) []byte {
	out := make([]byte, 0, len(stdout)+len(stderr))
	out = append(out, stdout...)
	return append(out, stderr...)
}

// Exec runs one exec probe attempt as the kubelet does
// (pkg/kubelet/prober/prober.go runProbe → pkg/probe/exec/exec.go), with run
// wrapping CRI ExecSync and timeout the probe's timeoutSeconds. The kubelet
// expands $(VAR) references in the command with the container's env first
// (ExpandCommand); Exec runs action.Command as given.
//
//   - Exit code 0: Success, Output is stdout followed by stderr.
//   - Non-zero exit code: Failure, Output is stdout followed by stderr
//     (that is what follows "probe failed: " in the event, possibly empty).
//   - A timeout (see ExecFunc): Failure, Output is the cri-client's error
//     text, `command timed out: "<cmd joined by spaces>" timed out after
//     <timeout>` (with the ExecProbeTimeout gate on, its default).
//   - Any other error: Unknown with Err set and no Output (the kubelet
//     retries, then records "errored and resulted in unknown state: <err>").
//
// The output is cut to MaxBodyLength bytes.
func Exec(ctx context.Context, run ExecFunc, action *corev1.ExecAction, timeout time.Duration) Result {
	if action == nil {
		return Result{Outcome: Unknown, Err: errors.New("no exec action")}
	}
	cmd := action.Command
	res := Result{Target: strings.Join(cmd, " ")}
	if run == nil {
		res.Outcome, res.Err = Unknown, errors.New("no exec runner")
		return res
	}
	stdout, stderr, code, err := run(ctx, cmd, timeout)
	if err != nil {
		if isTimeout(err) {
			if !errors.Is(err, ErrCommandTimedOut) {
				err = fmt.Errorf("%w: %q timed out after %s", ErrCommandTimedOut, strings.Join(cmd, " "), timeout)
			}
			res.Outcome, res.Output = Failure, err.Error()
			return res
		}
		res.Outcome, res.Err = Unknown, err
		return res
	}
	out := combinedOutput(stdout, stderr)
	if len(out) > MaxBodyLength {
		out = out[:MaxBodyLength]
	}
	res.Output, res.ExitCode = string(out), code
	if code == 0 {
		res.Outcome = Success
	} else {
		res.Outcome = Failure
	}
	return res
}

// grpcDeadlineExceeded is codes.DeadlineExceeded in google.golang.org/grpc.
const grpcDeadlineExceeded = 4

// isTimeout reports whether err is an ExecSync timeout: ErrCommandTimedOut,
// context.DeadlineExceeded, or a gRPC status error (anywhere in the chain)
// whose code is DeadlineExceeded, the case the cri-client turns into
// ErrCommandTimedOut. The gRPC status is read through its GRPCStatus and
// Code methods so that this package needs no gRPC import.
func isTimeout(err error) bool {
	if errors.Is(err, ErrCommandTimedOut) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	code, ok := grpcCode(err)
	return ok && code == grpcDeadlineExceeded
}

// grpcCode finds the first error in err's chain with a GRPCStatus() method
// and returns the Code() of the status it gives.
func grpcCode(err error) (uint64, bool) {
	for err != nil {
		m := reflect.ValueOf(err).MethodByName("GRPCStatus")
		if m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
			s := m.Call(nil)[0]
			if s.Kind() == reflect.Pointer && !s.IsNil() {
				c := s.MethodByName("Code")
				if c.IsValid() && c.Type().NumIn() == 0 && c.Type().NumOut() == 1 {
					if v := c.Call(nil)[0]; v.CanUint() {
						return v.Uint(), true
					}
				}
			}
		}
		err = errors.Unwrap(err)
	}
	return 0, false
}

// ExpandCommand substitutes $(VAR) references in an exec probe's command
// with the container's env values, as the kubelet's
// ExpandContainerCommandOnlyStatic (pkg/kubelet/container/helpers.go) does
// before an exec probe runs: every env entry counts with its Value, so one
// set by valueFrom expands to "" and the last entry of a name wins; the
// escaping rules are internal/expansion's. Lifecycle hooks' commands are not
// expanded (pkg/kubelet/lifecycle/handlers.go runs handler.Exec.Command as
// is).
func ExpandCommand(cmd []string, env []corev1.EnvVar) []string {
	if len(cmd) == 0 {
		return nil
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	mapping := expansion.MappingFuncFor(func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	})
	out := make([]string, 0, len(cmd))
	for _, s := range cmd {
		out = append(out, expansion.Expand(s, mapping))
	}
	return out
}
