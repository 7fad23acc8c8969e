package session

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

	"golang.org/x/sys/unix"

	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// Interrupts carries a run's signals. The first SIGINT, SIGTERM or SIGHUP
// (a closed terminal) cancels the run, which then tears the pod down. A
// second one abandons the teardown at once: it says what is left and exits.
// What counts as a second one is signalPolicy's: the same signal again
// within RepeatWindow of the first is the same event, sent twice.
//
// SIGPIPE is not one of them: Go raises it for a write to any broken pipe
// or socket, a runtime that died included, so it cannot tell that the
// reader of stdout went away. It is ignored, and Stdout's writer turns the
// EPIPE of a write to stdout into an interrupt instead.
type Interrupts struct {
	cancel context.CancelFunc
	stderr io.Writer
	exit   func(int)

	sigs   chan os.Signal
	policy signalPolicy
	now    func() time.Time
	first  chan struct{} // closed by the first interrupt
	once   sync.Once
	done   chan struct{}

	stdoutGone atomic.Bool // the reader of stdout went away (Stdout)

	mu  sync.Mutex
	eng *steps.Engine // what is left comes from it, once there is one
	// more reports what other engines left (bench runs several at once).
	more func() []steps.LeftBehind
	// onAbandon, when set, says what an abandoned run leaves and gives the
	// exit code (podstep fleet: runner pods, not engines).
	onAbandon func(io.Writer) int
}

// WatchSignals starts listening; Stop ends it.
func WatchSignals(cancel context.CancelFunc, stderr io.Writer) *Interrupts {
	in := &Interrupts{cancel: cancel, stderr: stderr, exit: os.Exit, now: time.Now,
		sigs: make(chan os.Signal, 4), first: make(chan struct{}), done: make(chan struct{})}
	signal.Ignore(syscall.SIGPIPE)
	signal.Notify(in.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go in.loop()
	return in
}

func (in *Interrupts) loop() {
	for {
		select {
		case sig := <-in.sigs:
			NoteSignal(sig)
			v := in.policy.next(sig, in.now())
			if v == sigFirst && in.Interrupted() {
				v = sigAgain // stdout's reader went away first: this signal is the second interrupt
			}
			switch v {
			case sigFirst:
				in.Interrupt()
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

// Interrupt is the first interrupt: it cancels the run. Calling it again
// does nothing.
func (in *Interrupts) Interrupt() {
	in.once.Do(func() {
		close(in.first)
		in.cancel()
	})
}

// Interrupted reports whether the run was interrupted.
func (in *Interrupts) Interrupted() bool {
	select {
	case <-in.first:
		return true
	default:
		return false
	}
}

// Watch names the engine whose leftovers an abandoned teardown reports.
func (in *Interrupts) Watch(eng *steps.Engine) {
	in.mu.Lock()
	in.eng = eng
	in.mu.Unlock()
}

// WatchMany names a source of what several engines left (podstep bench).
func (in *Interrupts) WatchMany(more func() []steps.LeftBehind) {
	in.mu.Lock()
	in.more = more
	in.mu.Unlock()
}

// OnAbandon replaces what a second interrupt says and exits with, for a
// frontend whose leftovers are not engines (podstep fleet's runner pods).
func (in *Interrupts) OnAbandon(f func(io.Writer) int) {
	in.mu.Lock()
	in.onAbandon = f
	in.mu.Unlock()
}

// abandon gives up on the teardown in progress: it says what is left and
// exits, ExitLeftBehind when something is.
func (in *Interrupts) abandon() {
	in.mu.Lock()
	eng, more, custom := in.eng, in.more, in.onAbandon
	in.mu.Unlock()
	if custom != nil {
		in.exit(custom(in.stderr))
		return
	}
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
		in.exit(InterruptedCode())
		return
	}
	fmt.Fprintf(in.stderr, "podstep: interrupted again: teardown abandoned; left: %s; run `podstep cleanup` to remove it\n", left)
	in.exit(ExitLeftBehind)
}

// Stop stops listening for signals.
func (in *Interrupts) Stop() {
	signal.Stop(in.sigs)
	close(in.done)
}

// NotStarted is the error of a run that ended before anything was created:
// an interrupt while connecting is exit 130, said once; else err.
func (in *Interrupts) NotStarted(err error) error {
	if in.Interrupted() {
		fmt.Fprintln(in.stderr, "podstep: interrupted before anything was created")
		return Silent(ExitInterrupted)
	}
	return err
}

// Stdout is stdout for a run: a reader of it that goes away (`| head`,
// `| less` quit) interrupts the run (stdoutWatch), which tears the pod
// down and ends quietly with exit 0 (StdoutGone), as a reader that has read
// what it wanted is no failure. When stdout is a pipe, its reader going
// away is noticed at once (watchPipe), not at the next write, which may
// come only after a long step.
func (in *Interrupts) Stdout(w io.Writer) io.Writer {
	gone := func() {
		in.stdoutGone.Store(true)
		in.Interrupt()
	}
	if f, ok := safe.Raw(w).(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			go watchPipe(int(f.Fd()), in.done, gone)
		}
	}
	return &stdoutWatch{w: w, gone: gone}
}

// StdoutGone reports whether the run stopped because the reader of its
// stdout went away.
func (in *Interrupts) StdoutGone() bool { return in.stdoutGone.Load() }

// watchPipe calls gone once the read end of the pipe fd goes away (poll
// reports POLLERR on a pipe's write end then), until done closes.
func watchPipe(fd int, done <-chan struct{}, gone func()) {
	for {
		select {
		case <-done:
			return
		default:
		}
		fds := []unix.PollFd{{Fd: int32(fd)}}
		n, err := unix.Poll(fds, 200)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			gone()
			return
		}
	}
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
