package session

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/podstep/podstep/internal/outfile"
)

// The signal exit codes: 128+N, what a shell shows for a process the
// signal ended, which every podstep command exits with after cleaning up
// (ExitInterrupted is SIGINT's).
const (
	ExitSIGHUP  = 129 // 128+1: SIGHUP (the terminal closed)
	ExitSIGTERM = 143 // 128+15: SIGTERM
)

// Codes is the one table of every command's exit codes: docs/exit-codes.md
// is made from it (go test ./internal/session -run TestExitCodesDoc -update).
var Codes = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "success. `run`: the pod is running (every container started, hooks succeeded, nothing exited during `--settle`; with `--wait-ready` the pod is Ready) or it completed (`Succeeded`). `replay`: the recording was read to its summary, whatever the recorded run's own outcome. `diff`: the two are the same after normalisation. `bench --compare`: no significant regression."},
	{ExitPodFailed, "`run`: the pod failed at a stage (the last line names the stage, the step, the kubelet's reason and the runtime's text). `diff`: the two differ. `bench`: a pod failed, or `--compare` found a significant regression."},
	{ExitUsage, "bad input or usage: one error naming the file, the field, what is wrong and what is expected; nothing was sent to a runtime. Also a recording or trace that is not one, of a newer format, damaged or cut off (`replay`, `diff`), and an output file refused (a link, FIFO or device, without `--force`) or that cannot be written."},
	{ExitRuntime, "the runtime is unreachable or unusable, or it went away during the run; the TUI could not use the terminal."},
	{ExitLeftBehind, "teardown (or `cleanup`) did not finish: something podstep made is left (listed on stderr); run `podstep cleanup`. A second signal that abandons teardown ends so too."},
	{ExitSIGHUP, "SIGHUP (the terminal closed): what was created was torn down, the TUI restored the terminal, then podstep exited."},
	{ExitInterrupted, "SIGINT (Ctrl-C), or the reader of stdout went away (`podstep run … | head`): what was created was torn down, a file being written was left as it was, then podstep exited."},
	{ExitSIGTERM, "SIGTERM: as SIGINT."},
}

// firstSignal is the first SIGINT, SIGTERM or SIGHUP a handler noted.
var firstSignal atomic.Int32

// NoteSignal records s when it is the first signal: Print's exit code for
// an interrupted command (ExitInterrupted) becomes 128+N of it.
func NoteSignal(s os.Signal) {
	if n, ok := s.(syscall.Signal); ok {
		firstSignal.CompareAndSwap(0, int32(n))
	}
}

// Signalled says whether a signal was noted.
func Signalled() bool { return firstSignal.Load() != 0 }

// InterruptedCode is an interrupted command's exit code: 128+N of the
// first signal noted, ExitInterrupted when none (stdout went away).
func InterruptedCode() int {
	if n := firstSignal.Load(); n != 0 {
		return 128 + int(n)
	}
	return ExitInterrupted
}

// SignalContext is signal.NotifyContext for SIGINT, SIGTERM and SIGHUP
// that notes the signal (NoteSignal).
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			NoteSignal(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

// OutputErr is an output file's error: interrupted (128+N, the file left
// as it was), else refused or not written (exit 2).
func OutputErr(err error) error {
	var ie *outfile.InterruptedError
	if errors.As(err, &ie) {
		NoteSignal(ie.Signal)
		return &Error{ExitInterrupted, err}
	}
	return &Error{ExitUsage, err}
}
