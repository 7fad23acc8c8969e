package session

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/safe"
)

// Exit codes: Codes (signalexit.go) is their table, docs/exit-codes.md.
const (
	ExitOK          = 0   // the pod is running (or the command succeeded)
	ExitPodFailed   = 1   // the pod failed at a stage
	ExitUsage       = 2   // bad input or usage; nothing was sent to a runtime
	ExitRuntime     = 3   // the runtime is unreachable or unusable, or went away during the run
	ExitLeftBehind  = 4   // teardown (or cleanup) did not finish: something is left, run podstep cleanup
	ExitInterrupted = 130 // SIGINT/SIGTERM: torn down, then exited
)

// Error carries an exit code to the command's end, which maps every
// error in one place (Code, Print). Err nil: output already said why.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Usagef is bad input or usage (exit 2).
func Usagef(format string, a ...any) error {
	return &Error{ExitUsage, fmt.Errorf(format, a...)}
}

// RuntimeErr is a runtime unreachable or unusable (exit 3).
func RuntimeErr(err error) error { return &Error{ExitRuntime, err} }

// Silent ends with code after output already said why.
func Silent(code int) error { return &Error{Code: code} }

// Code is the exit code err gives: nil 0, an *Error its code, a bad
// manifest and anything else (cobra's flag and argument errors) 2.
func Code(err error) int {
	var ee *Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	}
	return ExitUsage
}

// Print says err once on stderr ("error: ...", nothing for a Silent one;
// its text sanitised, safe.Text) and returns its exit code (Code); an
// interrupt's is 128+N of the signal (InterruptedCode).
func Print(err error, stderr io.Writer) int {
	code := printErr(err, stderr)
	if code == ExitInterrupted {
		code = InterruptedCode()
	}
	return code
}

func printErr(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var me *manifest.Error
	if errors.As(err, &me) {
		fmt.Fprintln(stderr, "error:", safe.Text(me.Error()))
		return ExitUsage
	}
	var ee *Error
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "error:", safe.Text(ee.Err.Error()))
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "error:", safe.Text(err.Error()))
	return ExitUsage
}

// CheckOutput is the one check of an -o/--output value: one of allowed,
// else a usage error naming them.
func CheckOutput(output string, allowed ...string) error {
	for _, a := range allowed {
		if output == a {
			return nil
		}
	}
	return Usagef("-o/--output %q: expected %s", output, orList(allowed))
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Worst is the exit code of several pods' (bench): what needs the user
// first, as for one run: the runtime went away (3), something is left (4),
// an interrupt (130), a pod failed (1).
func Worst(codes []int, interrupted bool) int {
	has := map[int]bool{}
	for _, c := range codes {
		has[c] = true
	}
	for _, c := range []int{ExitRuntime, ExitLeftBehind, ExitInterrupted} {
		if has[c] {
			return c
		}
	}
	if interrupted {
		return ExitInterrupted
	}
	if has[ExitPodFailed] {
		return ExitPodFailed
	}
	return ExitOK
}
