package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/safe"
)

// Exit codes: exitCodes is their one table, docs/exit-codes.md is made
// from it (go test ./cmd/podstep -run TestExitCodesDoc -update).
const (
	ExitOK          = 0   // the pod is running (or the command succeeded)
	ExitPodFailed   = 1   // the pod failed at a stage
	ExitUsage       = 2   // bad input or usage; nothing was sent to a runtime
	ExitRuntime     = 3   // the runtime is unreachable or unusable, or went away during the run
	ExitLeftBehind  = 4   // teardown (or cleanup) did not finish: something is left, run podstep cleanup
	ExitSIGHUP      = 129 // 128+1: SIGHUP (a closed terminal), after cleaning up
	ExitInterrupted = 130 // 128+2: SIGINT (Ctrl-C), or the reader of stdout went away, after cleaning up
	ExitSIGTERM     = 143 // 128+15: SIGTERM, after cleaning up
)

// exitCodes is the table of every command's exit codes.
var exitCodes = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "success. `run`: the pod is running (every container started, hooks succeeded, nothing exited during `--settle`; with `--wait-ready` the pod is Ready) or it completed (`Succeeded`). `replay`: the recording was read to its summary, whatever the recorded run's own outcome. `diff`: the two are the same after normalisation. `bench --compare`: no significant regression."},
	{ExitPodFailed, "`run`: the pod failed at a stage (the last line names the stage, step, the kubelet's reason and the runtime's text). `diff`: the two differ. `bench`: a pod failed, or `--compare` found a significant regression."},
	{ExitUsage, "bad input or usage: one error naming the file, field, what is wrong and what is expected; nothing was sent to a runtime. Also: a recording or trace that is not one, of a newer format, damaged or cut off (`replay`, `diff`); an output file refused (a link, FIFO or device without `--force`) or that cannot be written."},
	{ExitRuntime, "the runtime is unreachable or unusable, or went away during the run; the TUI could not use the terminal."},
	{ExitLeftBehind, "teardown (or `cleanup`) did not finish: something podstep made is left (listed on stderr); run `podstep cleanup`. Also a second signal that abandoned teardown."},
	{ExitSIGHUP, "SIGHUP (the terminal closed): what was created was torn down, the TUI restored the terminal, then podstep exited."},
	{ExitInterrupted, "SIGINT (Ctrl-C), or the reader of stdout went away (`| head`): what was created was torn down, a file being written was left as it was, then podstep exited."},
	{ExitSIGTERM, "SIGTERM: as SIGINT."},
}

// firstSignal is the first SIGINT, SIGTERM or SIGHUP a command's handler
// received (0: none).
var firstSignal atomic.Int32

// noteSignal records s if it is the first signal.
func noteSignal(s os.Signal) {
	if n, ok := s.(syscall.Signal); ok {
		firstSignal.CompareAndSwap(0, int32(n))
	}
}

// signalExit is 128+N for a signal: the code a shell shows for a process
// the signal ended, which podstep exits with after cleaning up.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return ExitInterrupted
}

// interruptedCode is the exit code of an interrupted command: 128+N of
// the first signal, 130 when stdout went away without one.
func interruptedCode() int {
	if n := firstSignal.Load(); n != 0 {
		return 128 + int(n)
	}
	return ExitInterrupted
}

// exitError carries an exit code to Execute, which maps every error in one place.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, a...)}
}

func runtimeErr(err error) error { return &exitError{ExitRuntime, err} }

// outputErr is an output file's error: interrupted (128+N, the file left
// as it was), else refused or not written (usage).
func outputErr(err error) error {
	var ie *outfile.InterruptedError
	if errors.As(err, &ie) {
		noteSignal(ie.Signal)
		return &exitError{signalExit(ie.Signal), err}
	}
	return &exitError{ExitUsage, err}
}

// silentExit ends with code after output already said why.
func silentExit(code int) error { return &exitError{code: code} }

// exitCode maps an error to its exit code and prints it once.
func exitCode(err error, stderr io.Writer) int {
	code := exitCodeOf(err, stderr)
	if code == ExitInterrupted {
		code = interruptedCode() // SIGTERM and SIGHUP have their own
	}
	return code
}

func exitCodeOf(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var me *manifest.Error
	if errors.As(err, &me) {
		fmt.Fprintln(stderr, "error:", safe.Text(me.Error()))
		return ExitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "error:", safe.Text(ee.err.Error()))
		}
		return ee.code
	}
	// cobra's own flag and argument errors.
	fmt.Fprintln(stderr, "error:", safe.Text(err.Error()))
	return ExitUsage
}

// signalContext is signal.NotifyContext for SIGINT, SIGTERM and SIGHUP
// that notes the signal (noteSignal), for the exit code: a command that
// returns silentExit(ExitInterrupted) after it ends this way exits 128+N.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			noteSignal(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

// signalled says whether a command's handler received a signal.
func signalled() bool { return firstSignal.Load() != 0 }
