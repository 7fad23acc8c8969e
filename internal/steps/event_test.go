package steps

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eventLog records what one subscriber got, and whether it was ever
// called while another call to it (or to any subscriber) was under way.
type eventLog struct {
	mu      sync.Mutex
	events  []string
	inside  *atomic.Int32 // shared by all subscribers
	overlap atomic.Bool
}

func (l *eventLog) observe(ev Event) {
	if l.inside.Add(1) > 1 {
		l.overlap.Store(true)
	}
	defer l.inside.Add(-1)
	if ev.Kind == CallSent && ev.Method == "StopContainer" {
		time.Sleep(10 * time.Millisecond) // the other stops are sent meanwhile
	}
	s := fmt.Sprintf("%s %d", ev.Kind, ev.Step.ID)
	if ev.Method != "" {
		s += " " + ev.Method
	}
	if ev.Call != nil {
		s += " " + ev.Call.Method
	}
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// TestSubscribe: every subscriber gets every event from its subscription
// on, all in the same order, never two at once (teardown stops containers
// in parallel), none after it cancelled; subscribing and cancelling from
// other goroutines while the engine runs is safe (go test -race).
func TestSubscribe(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: three
spec:
  containers:
  - {name: a, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"]}
  - {name: b, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"]}
  - {name: c, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"]}
`
	e := New(parse(t, pod), newSim(t), testOptions(t))
	var inside atomic.Int32
	first, second, late := &eventLog{inside: &inside}, &eventLog{inside: &inside}, &eventLog{inside: &inside}
	e.Subscribe(first.observe)
	cancelSecond := e.Subscribe(second.observe)

	// Subscribers come and go on other goroutines while steps run.
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				e.Subscribe(func(Event) {})()
			}
		}
	}()

	ctx := context.Background()
	if _, err := e.Next(ctx); err != nil {
		t.Fatal(err)
	}
	cancelLate := e.Subscribe(late.observe)
	for !e.Finished() {
		if err := e.Continue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cancelSecond()
	cancelSecond() // a second cancel does nothing
	if err := e.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	churn.Wait()
	cancelLate()

	all, cut, tail := first.get(), second.get(), late.get()
	stopped := 0
	for _, ev := range all {
		if strings.HasSuffix(ev, " StopContainer") && strings.HasPrefix(ev, string(CallDone)) {
			stopped++
		}
	}
	if stopped != 3 {
		t.Errorf("saw %d StopContainer calls done, want 3:\n%s", stopped, strings.Join(all, "\n"))
	}
	if first.overlap.Load() || second.overlap.Load() || late.overlap.Load() {
		t.Error("a subscriber was called while another call was under way")
	}
	// The first step (no CRI call) is a started and a done event.
	if len(all) < 2 || all[0] != string(StepStarted)+" 1" || all[1] != string(StepDone)+" 1" {
		t.Fatalf("first events %q, want step 1 started and done", all[:min(2, len(all))])
	}
	if !isPrefix(cut, all) || len(cut) == len(all) || len(cut) < 2 {
		t.Errorf("cancelled subscriber got %d events, want a proper prefix of the %d others got", len(cut), len(all))
	}
	if !isSuffix(tail, all) || len(tail) != len(all)-2 {
		t.Errorf("late subscriber got %d events, want every one after step 1's (%d)", len(tail), len(all)-2)
	}
}

func isPrefix(p, s []string) bool {
	return len(p) <= len(s) && strings.Join(p, "\n") == strings.Join(s[:len(p)], "\n")
}

func isSuffix(p, s []string) bool {
	return len(p) <= len(s) && strings.Join(p, "\n") == strings.Join(s[len(s)-len(p):], "\n")
}
