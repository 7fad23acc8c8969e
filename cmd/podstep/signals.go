package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

// interrupts carries a run's signals. The first SIGINT, SIGTERM or SIGHUP
// (a closed terminal) cancels the run, which then tears the pod down. A
// second one abandons the teardown at once: it says what is left and exits.
//
// SIGPIPE is not one of them: Go raises it for a write to any broken pipe
// or socket, a runtime that died included, so it cannot tell that the
// reader of stdout went away. It is ignored, and stdoutWatch turns the
// EPIPE of a write to stdout into an interrupt instead.
type interrupts struct {
	cancel context.CancelFunc
	stderr io.Writer
	exit   func(int)

	sigs  chan os.Signal
	first chan struct{} // closed by the first interrupt
	once  sync.Once
	done  chan struct{}

	mu  sync.Mutex
	eng *steps.Engine // what is left comes from it, once there is one
	// more reports what other engines left (bench runs several at once).
	more func() []steps.LeftBehind
}

// watchSignals starts listening; stop ends it.
func watchSignals(cancel context.CancelFunc, stderr io.Writer) *interrupts {
	in := &interrupts{cancel: cancel, stderr: stderr, exit: os.Exit,
		sigs: make(chan os.Signal, 2), first: make(chan struct{}), done: make(chan struct{})}
	signal.Ignore(syscall.SIGPIPE)
	signal.Notify(in.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go in.loop()
	return in
}

func (in *interrupts) loop() {
	for {
		select {
		case s := <-in.sigs:
			session.NoteSignal(s)
			if in.interrupted() {
				in.abandon()
				return
			}
			in.interrupt()
		case <-in.done:
			return
		}
	}
}

// interrupt is the first interrupt: it cancels the run. Calling it again
// does nothing.
func (in *interrupts) interrupt() {
	in.once.Do(func() {
		close(in.first)
		in.cancel()
	})
}

// interrupted reports whether the run was interrupted.
func (in *interrupts) interrupted() bool {
	select {
	case <-in.first:
		return true
	default:
		return false
	}
}

// watch names the engine whose leftovers an abandoned teardown reports.
func (in *interrupts) watch(eng *steps.Engine) {
	in.mu.Lock()
	in.eng = eng
	in.mu.Unlock()
}

// watchMany names a source of what several engines left (podstep bench).
func (in *interrupts) watchMany(more func() []steps.LeftBehind) {
	in.mu.Lock()
	in.more = more
	in.mu.Unlock()
}

// abandon gives up on the teardown in progress: it says what is left and
// exits, ExitLeftBehind when something is.
func (in *interrupts) abandon() {
	in.mu.Lock()
	eng, more := in.eng, in.more
	in.mu.Unlock()
	var all []steps.LeftBehind
	if eng != nil {
		all = append(all, eng.LeftBehind())
	}
	if more != nil {
		all = append(all, more()...)
	}
	var parts []string
	for _, l := range all {
		if !l.Empty() {
			parts = append(parts, l.String())
		}
	}
	left := strings.Join(parts, "; ")
	if left == "" {
		fmt.Fprintln(in.stderr, "podstep: interrupted again: stopped; nothing was left to tear down")
		in.exit(session.InterruptedCode())
		return
	}
	fmt.Fprintf(in.stderr, "podstep: interrupted again: teardown abandoned; left: %s; run `podstep cleanup` to remove it\n", left)
	in.exit(ExitLeftBehind)
}

// stop stops listening for signals.
func (in *interrupts) stop() {
	signal.Stop(in.sigs)
	close(in.done)
}

// stdoutWatch is stdout for a run: the first write that fails with EPIPE
// (whoever read stdout went away: `podstep run … | head`) interrupts the
// run, which tears the pod down; that write and later ones are dropped.
type stdoutWatch struct {
	w      io.Writer
	gone   func()
	broken atomic.Bool
}

func (s *stdoutWatch) Write(p []byte) (int, error) {
	if s.broken.Load() {
		return len(p), nil
	}
	n, err := s.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		if !s.broken.Swap(true) {
			s.gone()
		}
		return len(p), nil
	}
	return n, err
}
