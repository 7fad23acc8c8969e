package steps

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

// TestBackOffSequence checks the kubelet's back-off arithmetic: 10 s
// doubling to a 5 min cap, reset after twice the cap without a failure.
func TestBackOffSequence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b *backOff
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	now := t0
	for i, w := range want {
		b = b.next(now)
		if b.delay != w {
			t.Fatalf("failure %d: delay %s, want %s", i+1, b.delay, w)
		}
		now = now.Add(time.Second)
	}
	// Stale: more than 2×5 min since the last move starts over.
	if got := b.next(now.Add(11 * time.Minute)).delay; got != initialBackOff {
		t.Errorf("after 11 min quiet the delay is %s, want %s", got, initialBackOff)
	}

	cases := []struct {
		name     string
		b        *backOff
		finished time.Time
		now      time.Time
		want     bool
	}{
		{"no entry: never in back-off", nil, t0, t0, false},
		{"within the delay since the exit", &backOff{delay: 10 * time.Second, lastUpdate: t0}, t0.Add(time.Second), t0.Add(5 * time.Second), true},
		{"delay over", &backOff{delay: 10 * time.Second, lastUpdate: t0}, t0.Add(time.Second), t0.Add(12 * time.Second), false},
		{"stale entry", &backOff{delay: 300 * time.Second, lastUpdate: t0}, t0.Add(11 * time.Minute), t0.Add(11 * time.Minute), false},
	}
	for _, tc := range cases {
		if got := tc.b.inBackOffSince(tc.finished, tc.now); got != tc.want {
			t.Errorf("%s: inBackOffSince = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCrashLoop runs a container that exits at once under each restart
// policy and checks what the kubelet would do: restarts (attempt numbers,
// back-off, CrashLoopBackOff and its message, last state), or none.
func TestCrashLoop(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: crash
  annotations:
    sim.podstep.dev/exit-code.app: "%d"
spec:
  restartPolicy: %s
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "exit %d"]
`
	cases := []struct {
		policy   string
		code     int
		creates  int    // CreateContainer calls
		failedAt string // "" = not failed
		display  string
		phase    string
	}{
		{"Always", 2, 3, "backoff/app", "CrashLoopBackOff", "Running"},
		{"Always", 0, 3, "backoff/app", "CrashLoopBackOff", "Running"},
		{"OnFailure", 2, 3, "backoff/app", "CrashLoopBackOff", "Running"},
		{"OnFailure", 0, 1, "", "Completed", "Succeeded"},
		{"Never", 2, 1, "relist", "Error", "Failed"},
		{"Never", 0, 1, "", "Completed", "Succeeded"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-exit%d", tc.policy, tc.code), func(t *testing.T) {
			c := newSim(t)
			e := runAll(t, parse(t, fmt.Sprintf(pod, tc.code, tc.policy, tc.code)), c, testOptions(t))
			defer teardown(t, e)
			var attempts []uint32
			for _, call := range c.Calls() {
				if r, ok := call.Request.(*runtimeapi.CreateContainerRequest); ok {
					attempts = append(attempts, r.Config.Metadata.Attempt)
				}
			}
			if len(attempts) != tc.creates {
				t.Fatalf("%d CreateContainer calls (attempts %v), want %d", len(attempts), attempts, tc.creates)
			}
			for i, a := range attempts {
				if a != uint32(i) {
					t.Errorf("CreateContainer %d has attempt %d, want %d", i+1, a, i)
				}
			}
			f, failed := e.Failed()
			if got := map[bool]string{true: f.Name}[failed]; got != tc.failedAt {
				t.Fatalf("failed at %q (%s), want %q", got, f.Result.Message, tc.failedAt)
			}
			st := e.PodState()
			if st.Display != tc.display || string(st.Status.Phase) != tc.phase {
				t.Errorf("STATUS %s phase %s, want %s %s", st.Display, st.Status.Phase, tc.display, tc.phase)
			}
			if tc.creates == 1 {
				return
			}
			cs := st.Status.ContainerStatuses[0]
			if cs.RestartCount != 2 {
				t.Errorf("restartCount %d, want 2", cs.RestartCount)
			}
			w := cs.State.Waiting
			wantMsg := fmt.Sprintf("back-off 20s restarting failed container=app pod=crash_default(%s)", e.Pod().UID)
			if w == nil || w.Reason != reason.ErrCrashLoopBackOff || w.Message != wantMsg {
				t.Errorf("state %+v, want waiting CrashLoopBackOff %q", cs.State, wantMsg)
			}
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != int32(tc.code) {
				t.Errorf("last state %+v, want terminated with %d", cs.LastTerminationState, tc.code)
			}
			backoffs := 0
			for _, ev := range st.Events {
				if ev.Reason == reason.BackOffStartContainer && ev.Type == corev1.EventTypeWarning && ev.Message == "Back-off restarting failed container app in pod crash_default("+string(e.Pod().UID)+")" {
					backoffs++
				}
			}
			// Restart 1 is at once; restart 2 waits 10 s; giving up is at 20 s.
			if backoffs != 2 {
				t.Errorf("%d BackOff events, want 2: %+v", backoffs, st.Events)
			}
			if !strings.Contains(f.Result.Message, "--max-restarts 2") || f.Result.Reason != reason.ErrCrashLoopBackOff {
				t.Errorf("give-up %s: %s", f.Result.Reason, f.Result.Message)
			}
		})
	}
}

// TestImagePullBackOffOnRetry checks a retried pull within the image back-off
// is ImagePullBackOff (a Normal BackOff event, the waiting reason) before
// the kubelet pulls again, and that the back-off doubles.
func TestImagePullBackOffOnRetry(t *testing.T) {
	c := newSim(t)
	b := parse(t, fmt.Sprintf(faultPod, `sim.podstep.dev/pull-error: "docker.io/library/nginx:1=401 Unauthorized"`, "docker.io/library/nginx:1", "IfNotPresent"))
	e := runAll(t, b, c, testOptions(t))
	defer teardown(t, e)
	if f, _ := e.Failed(); f.Name != "pull/app" || f.Result.Reason != reason.ErrImagePull {
		t.Fatalf("first failure %s %s", f.Name, f.Result.Reason)
	}
	if err := e.Retry(); err != nil {
		t.Fatal(err)
	}
	s, err := e.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "pull/app" || s.Result.Reason != reason.ErrImagePull {
		t.Fatalf("retry: %s %s", s.Name, s.Result.Reason)
	}
	var sawBackOff, sawDetail, sawError bool
	for _, ev := range e.PodState().Events {
		sawBackOff = sawBackOff || (ev.Type == corev1.EventTypeNormal && ev.Reason == reason.BackOffPullImage && ev.Message == `Back-off pulling image "docker.io/library/nginx:1"`)
		sawError = sawError || (ev.Type == corev1.EventTypeWarning && ev.Reason == reason.FailedToCreateContainer && ev.Message == "Error: "+reason.ErrImagePullBackOff)
	}
	for _, d := range s.Result.Details {
		sawDetail = sawDetail || (d.Key == reason.ErrImagePullBackOff && strings.HasPrefix(d.Value, "back-off 10s"))
		if d.Key == "pull back-off" && !strings.HasPrefix(d.Value, "20s") {
			t.Errorf("second failure: pull back-off %s, want 20s", d.Value)
		}
	}
	if !sawBackOff || !sawDetail || !sawError {
		t.Errorf("no ImagePullBackOff shown (BackOff event %v, detail %v, Failed event %v): %+v", sawBackOff, sawDetail, sawError, s.Result.Details)
	}
	pulls := 0
	for _, call := range c.Calls() {
		if call.Method == "PullImage" {
			pulls++
		}
	}
	if pulls != 2 {
		t.Errorf("%d PullImage calls, want 2 (one per try)", pulls)
	}
}

// TestHTTPGetHook runs httpGet postStart hooks against a real HTTP server on
// this machine (host 127.0.0.1, as a hook with host set is sent there) and
// checks the kubelet 1.33 rules: any answer, even a 500, is a success, with
// the kubelet's lifecycle User-Agent and the hook's headers; no answer at
// all fails the hook, kills the container and, restartPolicy Never, ends the
// pod.
func TestHTTPGetHook(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	closed := closedPort(t)
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: http-hook
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        httpGet:
          host: %s
          port: %s
          path: /started
          httpHeaders:
          - name: X-Podstep
            value: hook
`
	t.Run("500 is a success", func(t *testing.T) {
		e := runAll(t, parse(t, fmt.Sprintf(pod, host, port)), newSim(t), testOptions(t))
		defer teardown(t, e)
		if f, failed := e.Failed(); failed {
			t.Fatalf("failed at %s: %s", f.Name, f.Result.Message)
		}
		if got.Get("X-Podstep") != "hook" || !strings.HasPrefix(got.Get("User-Agent"), "kube-lifecycle/") {
			t.Errorf("request headers %v", got)
		}
	})
	t.Run("no answer fails", func(t *testing.T) {
		e := runAll(t, parse(t, fmt.Sprintf(pod, "127.0.0.1", closed)), newSim(t), testOptions(t))
		defer teardown(t, e)
		f, failed := e.Failed()
		if !failed || f.Name != "post-start/app" || f.Result.Reason != reason.ErrPostStartHook {
			t.Fatalf("want a PostStartHookError at post-start/app, got %v %s %s", failed, f.Name, f.Result.Reason)
		}
		want := fmt.Sprintf(`HTTP lifecycle hook (/started) for Container "app" in Pod "http-hook_default(%s)" failed - error: `, e.Pod().UID)
		if !strings.HasPrefix(f.Result.Message, want) || !strings.Contains(f.Result.Message, "connection refused") {
			t.Errorf("message %q, want prefix %q and connection refused", f.Result.Message, want)
		}
		var stops int
		for _, call := range f.Calls {
			if call.Method == "StopContainer" {
				stops++
			}
		}
		if stops != 1 {
			t.Errorf("%d StopContainer calls in the hook step, want 1 (the kubelet kills the container)", stops)
		}
	})
}

// closedPort returns a TCP port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
