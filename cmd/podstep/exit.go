package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/safe"
)

// Exit codes, documented in the README.
const (
	ExitOK          = 0   // the pod is running (or the command succeeded)
	ExitPodFailed   = 1   // the pod failed at a stage
	ExitUsage       = 2   // bad input or usage; nothing was sent to a runtime
	ExitRuntime     = 3   // the runtime is unreachable or unusable, or went away during the run
	ExitLeftBehind  = 4   // teardown (or cleanup) did not finish: something is left, run podstep cleanup
	ExitInterrupted = 130 // SIGINT/SIGTERM: torn down, then exited
)

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

// silentExit ends with code after output already said why.
func silentExit(code int) error { return &exitError{code: code} }

// exitCode maps an error to its exit code and prints it once.
func exitCode(err error, stderr io.Writer) int {
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
