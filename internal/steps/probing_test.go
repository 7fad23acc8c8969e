package steps

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/reason"
)

// TestReadyStage runs the ready stage (--wait-ready) with each probe type
// and checks the pod ends Ready, or not Ready with the kubelet's Unhealthy
// events, or killed and restarted when its startup probe fails.
func TestReadyStage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = fmt.Fprint(w, "ok")
			return
		}
		http.Error(w, "not yet", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	closed := closedPort(t)

	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: probed
  annotations:
    sim.podstep.dev/exec-exit-code.app: "%d"
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
%s`
	cases := []struct {
		name     string
		exit     int
		probes   string
		failedAt string
		reason   string
		ready    string
		event    string // an event message that must be recorded
	}{
		{"exec passes", 0, `    readinessProbe:
      exec:
        command: ["cat", "/tmp/ready"]
      periodSeconds: 1
`, "", "", "1/1", ""},
		{"exec fails", 1, `    readinessProbe:
      exec:
        command: ["cat", "/tmp/ready"]
      periodSeconds: 1
`, "ready", reason.ContainersNotReady, "0/1", "Readiness probe failed: "},
		{"httpGet passes", 0, fmt.Sprintf(`    readinessProbe:
      httpGet:
        host: %s
        port: %s
        path: /healthz
      periodSeconds: 1
`, host, port), "", "", "1/1", ""},
		{"httpGet 503", 0, fmt.Sprintf(`    readinessProbe:
      httpGet:
        host: %s
        port: %s
        path: /other
      periodSeconds: 1
`, host, port), "ready", reason.ContainersNotReady, "0/1", "Readiness probe failed: HTTP probe failed with statuscode: 503"},
		{"tcpSocket passes", 0, fmt.Sprintf(`    readinessProbe:
      tcpSocket:
        host: %s
        port: %s
      periodSeconds: 1
`, host, port), "", "", "1/1", ""},
		{"tcpSocket refused", 0, fmt.Sprintf(`    readinessProbe:
      tcpSocket:
        host: 127.0.0.1
        port: %s
      periodSeconds: 1
`, closed), "ready", reason.ContainersNotReady, "0/1", "connection refused"},
		{"startup then readiness", 0, `    startupProbe:
      exec:
        command: ["true"]
      periodSeconds: 1
    readinessProbe:
      exec:
        command: ["true"]
      periodSeconds: 1
`, "", "", "1/1", ""},
		{"startup fails: killed and restarted", 1, `    startupProbe:
      exec:
        command: ["false"]
      periodSeconds: 1
      failureThreshold: 1
`, "backoff/app", reason.ErrCrashLoopBackOff, "0/1", "Container app failed startup probe, will be restarted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			o.WaitReady = true
			o.ReadyTimeout = 300 * time.Millisecond
			e := runAll(t, parse(t, fmt.Sprintf(pod, tc.exit, tc.probes)), newSim(t), o)
			defer teardown(t, e)
			f, failed := e.Failed()
			if got := map[bool]string{true: f.Name}[failed]; got != tc.failedAt || (failed && f.Result.Reason != tc.reason) {
				t.Fatalf("failed at %q with %s (%s), want %q with %s", got, f.Result.Reason, f.Result.Message, tc.failedAt, tc.reason)
			}
			st := e.PodState()
			if st.Ready != tc.ready {
				t.Errorf("READY %s, want %s", st.Ready, tc.ready)
			}
			if tc.ready == "1/1" && !podReady(st) {
				t.Errorf("pod Ready condition not True: %+v", st.Status.Conditions)
			}
			if tc.event != "" {
				found := false
				for _, ev := range st.Events {
					found = found || strings.Contains(ev.Message, tc.event)
				}
				if !found {
					t.Errorf("no event containing %q: %+v", tc.event, st.Events)
				}
			}
		})
	}
}

// TestSidecarStartupProbe checks the next init container waits for the
// sidecar's startup probe, as computeInitContainerActions does.
func TestSidecarStartupProbe(t *testing.T) {
	e := runAll(t, load(t, repoFile("internal/scenario/data/sidecar-startup-probe.yaml")), newSim(t), testOptions(t))
	defer teardown(t, e)
	if f, failed := e.Failed(); failed {
		t.Fatalf("failed at %s: %s", f.Name, f.Result.Message)
	}
	var order []string
	for _, s := range e.Steps() {
		if s.Stage == StageInit {
			order = append(order, s.Name)
		}
	}
	want := "pull/proxy create/proxy start/proxy startup/proxy pull/migrate create/migrate start/migrate wait/migrate"
	if strings.Join(order, " ") != want {
		t.Errorf("init steps:\n %s\nwant\n %s", strings.Join(order, " "), want)
	}
	st := e.PodState()
	if st.Display != "Running" || st.Ready != "2/2" {
		t.Errorf("STATUS %s READY %s, want Running 2/2", st.Display, st.Ready)
	}
}

// TestSimulatedPodIPNotProbed: on the simulated runtime (Options.Simulated)
// httpGet and tcpSocket probes and an httpGet hook aimed at the pod IP are
// not sent, since that IP leads nowhere (or to someone else's pod), and
// count as successes.
func TestSimulatedPodIPNotProbed(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: probed
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        httpGet:
          port: 8080
    readinessProbe:
      httpGet:
        port: 8080
      periodSeconds: 1
      timeoutSeconds: 1
    livenessProbe:
      tcpSocket:
        port: 8080
`
	o := testOptions(t)
	if !o.Simulated {
		t.Fatal("testOptions: the tests run on the simulated runtime")
	}
	o.WaitReady = true
	o.ReadyTimeout = 300 * time.Millisecond
	e := runAll(t, parse(t, pod), newSim(t), o)
	defer teardown(t, e)
	if f, failed := e.Failed(); failed {
		t.Fatalf("failed at %s: %s", f.Name, f.Result.Message)
	}
	var hook string
	for _, s := range e.Steps() {
		if s.Stage == StagePostStart {
			for _, d := range s.Result.Details {
				hook += d.Value
			}
		}
	}
	if !strings.Contains(hook, "not sent") {
		t.Errorf("postStart hook: %q, want it not sent", hook)
	}
	if got := e.PodState().Ready; got != "1/1" {
		t.Errorf("READY %s, want 1/1: the readiness probe counts as passed", got)
	}
}
