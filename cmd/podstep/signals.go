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
	"time"

	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

// interrupts carries a run's signals. The first SIGINT, SIGTERM or SIGHUP
// (a closed terminal) cancels the run, which then tears the pod down. A
// second one abandons the teardown at once: it says what is left and exits.
// What counts as a second one is signalPolicy's: the same signal again
// within RepeatWindow of the first is the same event, sent twice.
//
// SIGPIPE is not one of them: Go raises it for a write to any broken pipe
// or socket, a runtime that died included, so it cannot tell that the
// reader of stdout went away. It is ignored, and stdoutWatch turns the
// EPIPE of a write to stdout into an interrupt instead.
type interrupts struct {
	cancel context.CancelFunc
	stderr io.Writer
	exit   func(int)

	sigs   chan os.Signal
	policy signalPolicy
	now    func() time.Time
	first  chan struct{} // closed by the first interrupt
	once   sync.Once
	done   chan struct{}

	mu  sync.Mutex
	eng *steps.Engine // what is left comes from it, once there is one
	// more reports what other engines left (bench runs several at once).
	more func() []steps.LeftBehind
}

// watchSignals starts listening; stop ends it.
func watchSignals(cancel context.CancelFunc, stderr io.Writer) *interrupts {
	in := &interrupts{cancel: cancel, stderr: stderr, exit: os.Exit, now: time.Now,
		sigs: make(chan os.Signal, 4), first: make(chan struct{}), done: make(chan struct{})}
	signal.Ignore(syscall.SIGPIPE)
	signal.Notify(in.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go in.loop()
	return in
}

func (in *interrupts) loop() {
	for {
		select {
		case sig := <-in.sigs:
			session.NoteSignal(sig)
			v := in.policy.next(sig, in.now())
			if v == sigFirst && in.interrupted() {
				v = sigAgain // stdout's reader went away first: this signal is the second interrupt
			}
			switch v {
			case sigFirst:
				in.interrupt()
			case sigAgain:
				in.abandon()
				return
			}
		case <-in.done:
			return
		}
	}
}

// RepeatWindow is how long after the first interrupt the same signal again
// is taken as the same event. coreutils timeout sends its signal to the
// child, then to the child's process group, which holds the child too, so
// podstep gets it twice: 0.3 ms apart (median of 30 under strace), 34 ms at
// most on a loaded 2-core machine. A person's second Ctrl-C comes later.
const RepeatWindow = 250 * time.Millisecond

// sigVerdict is what a signal means for a run.
type sigVerdict int

const (
	sigFirst  sigVerdict = iota // the first interrupt: cancel the run, tear down
	sigRepeat                   // the first one again (timeout's second copy): nothing to do
	sigAgain                    // a second interrupt: abandon the teardown
)

// signalPolicy tells a second interrupt from a repeat of the first. The
// zero value is ready: the first signal is sigFirst; the same signal within
// RepeatWindow of it is sigRepeat; any later one, or another signal, is
// sigAgain.
type signalPolicy struct {
	first    os.Signal
	received time.Time
}

// next says what sig, arriving at now, means.
func (p *signalPolicy) next(sig os.Signal, now time.Time) sigVerdict {
	if p.first == nil {
		p.first, p.received = sig, now
		return sigFirst
	}
	if sig == p.first && now.Sub(p.received) < RepeatWindow {
		return sigRepeat
	}
	return sigAgain
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
