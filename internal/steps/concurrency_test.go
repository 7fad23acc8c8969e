package steps

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
)

// TestConcurrentReads reads the engine as frontends do (the TUI calls
// Steps, NextStep, PodState, ContainerLog… on every refresh, a signal
// handler LeftBehind) from other goroutines, without pause, while the engine
// runs pods through init containers, a sidecar's startup probe, postStart
// hooks, restarts with back-off, a retry and readiness probes, then tears
// them down. Under -race (the test command's) it fails on any engine state
// that an action writes and a reader reads without the lock ordering them
// (the rule on Engine).
func TestConcurrentReads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)

	// Probes and hooks in every form the engine runs; the crash loop gives
	// up after MaxRestarts (CrashLoopBackOff), the ready pod gets Ready.
	const common = `  initContainers:
  - name: proxy
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    restartPolicy: Always
    startupProbe:
      exec:
        command: ["cat", "/tmp/up"]
      periodSeconds: 1
  - name: setup
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "echo setup"]
    env:
    - name: IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
  containers:
  - name: web
    image: docker.io/library/nginx:1
    lifecycle:
      postStart:
        httpGet:
          host: HOST
          port: PORT
          path: /started
    readinessProbe:
      httpGet:
        host: HOST
        port: PORT
        path: /ready
      periodSeconds: 1
`
	pods := map[string]string{
		"crash-loop": `apiVersion: v1
kind: Pod
metadata:
  name: racy-crash
  annotations:
    sim.podstep.dev/exit-code.app: "2"
spec:
` + common + `  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "exit 2"]
`,
		"ready": `apiVersion: v1
kind: Pod
metadata:
  name: racy-ready
spec:
` + common + `  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    readinessProbe:
      exec:
        command: ["true"]
      periodSeconds: 1
`,
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			pod = strings.ReplaceAll(strings.ReplaceAll(pod, "HOST", host), "PORT", port)
			o := testOptions(t)
			o.WaitReady = true
			o.ReadyTimeout = 10 * time.Second
			// A pause in the engine goroutine where an action goes on
			// right after (the step's start, each CRI call's end: a
			// subscriber is called there) lets the
			// readers run while it is about to write, with nothing
			// ordering their reads before its writes but what the engine
			// does (its lock): the race detector sees any write the lock
			// does not cover.
			e := New(parse(t, pod), newSim(t), o)
			e.Subscribe(func(ev Event) {
				if ev.Kind == StepStarted || ev.Kind == CallDone {
					time.Sleep(time.Millisecond)
				}
			})
			// Two readers, as the TUI refreshes (the engine's lock) and
			// shows the pod (the tracker's own lock): one lock taken by a
			// reader would order the other's reads before the engine's
			// next writes, and hide a race.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var reads [2]int
			for i, read := range []func(*Engine){readEngine, readPod} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						read(e)
						reads[i]++
					}
				}()
			}
			run := func() {
				for !e.Finished() {
					if err := e.Continue(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			}
			run()
			if _, failed := e.Failed(); failed {
				// A retried give-up restarts the container once more.
				if err := e.Retry(); err != nil {
					t.Error(err)
				} else {
					run()
				}
			}
			if err := e.Teardown(context.Background()); err != nil {
				t.Error(err)
			}
			close(stop)
			wg.Wait()
			if reads[0] < 10 || reads[1] < 10 {
				t.Errorf("the readers ran %v times during the run, want them to overlap it", reads)
			}
			f, failed := e.Failed()
			switch {
			case name == "crash-loop" && (!failed || f.Kind != KindBackoff):
				t.Errorf("crash loop: failed %v at %s, want a give-up at backoff/app", failed, f.Name)
			case name == "ready" && failed:
				t.Errorf("ready pod failed at %s: %s", f.Name, f.Result.Message)
			}
			if l := e.LeftBehind(); !l.Empty() {
				t.Errorf("left behind: %s", l)
			}
		})
	}
}

// readEngine reads what a frontend reads from the engine, as it renders it.
func readEngine(e *Engine) {
	for _, s := range e.Steps() {
		for _, r := range s.Requests {
			if r.Message != nil {
				_, _ = protojson.Marshal(r.Message)
			}
		}
	}
	if s, ok := e.NextStep(); ok {
		for _, r := range s.Requests {
			if r.Message != nil {
				_, _ = protojson.Marshal(r.Message)
			}
		}
	}
	e.Failed()
	e.Finished()
	e.SandboxID()
	for _, c := range e.Pod().Spec.InitContainers {
		_, _ = e.ContainerLog(c.Name, 5)
	}
	for _, c := range e.Pod().Spec.Containers {
		_, _ = e.ContainerLog(c.Name, 5)
	}
	e.LeftBehind()
	e.Breakpoint(1)
}

// readPod reads the pod's state, as the pod pane shows it.
func readPod(e *Engine) {
	st := e.PodState()
	_ = st.Display
}

// TestRunMethodsWhileRunning checks the run methods refuse to start while
// a step runs: two actions at once would write the engine's state together.
func TestRunMethodsWhileRunning(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	o := testOptions(t)
	e := New(load(t, repoFile("testdata/pods/hello.yaml")), newSim(t), o)
	e.Subscribe(func(ev Event) {
		if ev.Kind == StepStarted && first.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
	})
	done := make(chan error)
	go func() {
		_, err := e.Next(context.Background())
		done <- err
	}()
	<-started
	if _, err := e.Next(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("Next while a step runs: %v, want ErrRunning", err)
	}
	if err := e.Continue(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("Continue while a step runs: %v, want ErrRunning", err)
	}
	if err := e.Retry(); !errors.Is(err, ErrRunning) {
		t.Errorf("Retry while a step runs: %v, want ErrRunning", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := e.Steps(); s[0].State != Done || s[1].State != Pending {
		t.Errorf("after one Next: %s %s, %s %s; want the first step done, the next pending", s[0].Name, s[0].State, s[1].Name, s[1].State)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
