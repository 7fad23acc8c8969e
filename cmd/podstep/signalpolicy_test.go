package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalPolicy: the same signal within RepeatWindow of the first is the
// same event (coreutils timeout sends it to the child, then to its process
// group); a later one, or another signal, is a second interrupt.
func TestSignalPolicy(t *testing.T) {
	type sig struct {
		s  os.Signal
		at time.Duration // after the first
	}
	term, intr, hup := syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP
	for _, tc := range []struct {
		name string
		sigs []sig
		want []sigVerdict
	}{
		{"one", []sig{{term, 0}}, []sigVerdict{sigFirst}},
		{"timeout: child then group", []sig{{term, 0}, {term, 300 * time.Microsecond}}, []sigVerdict{sigFirst, sigRepeat}},
		{"timeout on a loaded machine", []sig{{term, 0}, {term, 34 * time.Millisecond}}, []sigVerdict{sigFirst, sigRepeat}},
		{"just inside the window", []sig{{intr, 0}, {intr, RepeatWindow - time.Nanosecond}}, []sigVerdict{sigFirst, sigRepeat}},
		{"at the window", []sig{{intr, 0}, {intr, RepeatWindow}}, []sigVerdict{sigFirst, sigAgain}},
		{"a person's second Ctrl-C", []sig{{intr, 0}, {intr, 600 * time.Millisecond}}, []sigVerdict{sigFirst, sigAgain}},
		{"many copies, then a person", []sig{{term, 0}, {term, time.Millisecond}, {term, 2 * time.Millisecond}, {term, time.Second}},
			[]sigVerdict{sigFirst, sigRepeat, sigRepeat, sigAgain}},
		{"another signal at once", []sig{{term, 0}, {intr, time.Millisecond}}, []sigVerdict{sigFirst, sigAgain}},
		{"window counts from the first", []sig{{hup, 0}, {hup, 200 * time.Millisecond}, {hup, 400 * time.Millisecond}},
			[]sigVerdict{sigFirst, sigRepeat, sigAgain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p signalPolicy
			t0 := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
			for i, s := range tc.sigs {
				if got := p.next(s.s, t0.Add(s.at)); got != tc.want[i] {
					t.Errorf("signal %d (%v at +%s) = %d, want %d", i, s.s, s.at, got, tc.want[i])
				}
			}
		})
	}
}

// TestInterruptsRepeat drives interrupts' loop with a clock: timeout's
// second copy cancels once and abandons nothing; a second signal after the
// window abandons (exit code ExitInterrupted: nothing was watched).
func TestInterruptsRepeat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gaps      []time.Duration
		abandoned bool
	}{
		{"timeout", []time.Duration{0, time.Millisecond}, false},
		{"twice by hand", []time.Duration{0, time.Second}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr bytes.Buffer
			exited := make(chan int, 1)
			now := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
			clock := make(chan time.Time, len(tc.gaps))
			in := &interrupts{cancel: cancel, stderr: &stderr, exit: func(c int) { exited <- c },
				now: func() time.Time { return <-clock }, sigs: make(chan os.Signal), first: make(chan struct{}), done: make(chan struct{})}
			go in.loop()
			for _, g := range tc.gaps {
				clock <- now.Add(g)
				in.sigs <- syscall.SIGTERM
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the first signal did not cancel the run")
			}
			if tc.abandoned {
				select {
				case c := <-exited:
					if c != ExitInterrupted || !strings.Contains(stderr.String(), "interrupted again") {
						t.Errorf("exit %d, stderr %q", c, stderr.String())
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a second signal after the window did not abandon")
				}
				return
			}
			select {
			case c := <-exited:
				t.Errorf("timeout's repeat abandoned the teardown (exit %d): %s", c, stderr.String())
			case <-time.After(200 * time.Millisecond):
			}
			in.stop()
		})
	}
}
