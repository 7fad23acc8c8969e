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

// TestSimulatedProbes: on the simulated runtime (Options.Simulated)
// httpGet, tcpSocket and grpc probes and an httpGet hook aimed at the pod
// IP are sent, by podstep's real probers, to the listeners the simulator
// opens for the container at the pod's loopback IP (127.0.0.1 for a
// host-network pod): the pod ends Ready, or not Ready with the kubelet's
// Unhealthy event under the probe-fail fault, and each verdict says what
// it rests on.
func TestSimulatedProbes(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: probed
  annotations: {%s}
spec:
  hostNetwork: %t
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: %s
    ports: [{name: web, containerPort: 8080}]
%s`
	free := closedPort(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "not the pod") }))
	defer other.Close()
	_, held, _ := net.SplitHostPort(other.Listener.Addr().String())
	cases := []struct {
		name    string
		ann     string
		hostNet bool
		cmd     string
		probes  string
		ready   string
		event   string   // an event message that must be recorded
		restsOn []string // substrings of the run's RestsOn
	}{
		{name: "httpGet on a declared port, and a postStart hook", probes: `    lifecycle:
      postStart:
        httpGet: {port: web}
    readinessProbe:
      httpGet: {port: 8080, path: /healthz}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{
			"app: readinessProbe: assumed: the program serves the container's declared containerPort 8080 and answers GET with 200: the simulator's listener on 127.",
			"postStart: assumed: the program serves the container's declared containerPort 8080"}},
		{name: "httpGet on a named port", probes: `    readinessProbe:
      httpGet: {port: web}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"declared containerPort 8080"}},
		{name: "httpGet HTTPS", probes: `    readinessProbe:
      httpGet: {port: web, scheme: HTTPS}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"declared containerPort 8080 and answers GET with 200 over TLS"}},
		{name: "tcpSocket on an undeclared port", probes: `    readinessProbe:
      tcpSocket: {port: 9000}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"assumed: the program serves port 9000, which its readinessProbe names but its containerPorts do not declare, and accepts the connection"}},
		{name: "grpc", probes: `    startupProbe:
      grpc: {port: 9090, service: liveness}
      periodSeconds: 1
    readinessProbe:
      grpc: {port: 9090}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"app: startupProbe: assumed: the program serves port 9090", "answers grpc.health.v1 Check with SERVING"}},
		{name: "probe-fail 500", ann: `sim.podstep.dev/probe-fail.app: "500"`, probes: `    readinessProbe:
      httpGet: {port: 8080}
      periodSeconds: 1
`, ready: "0/1", event: "Readiness probe failed: HTTP probe failed with statuscode: 500",
			restsOn: []string{"fault: sim.podstep.dev/probe-fail.app: 500: the simulator's listener on 127."}},
		{name: "probe-fail refuse", ann: `sim.podstep.dev/probe-fail.app: refuse`, probes: `    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
`, ready: "0/1", event: "connection refused", restsOn: []string{"fault: sim.podstep.dev/probe-fail.app: refuse"}},
		{name: "probe-fail refuse fails an httpGet postStart hook", ann: `sim.podstep.dev/probe-fail.app: refuse`, probes: `    lifecycle:
      postStart:
        httpGet: {port: web}
`, ready: "0/1", event: "FailedPostStartHook", restsOn: []string{"app: postStart: fault: sim.podstep.dev/probe-fail.app: refuse"}},
		{name: "grpc NOT_SERVING", ann: `sim.podstep.dev/probe-fail.app: "503"`, probes: `    readinessProbe:
      grpc: {port: 8080}
      periodSeconds: 1
`, ready: "0/1", event: `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{name: "exec: a script's exit code", probes: `    readinessProbe:
      exec: {command: [sh, -c, "echo starting; exit 1"]}
      periodSeconds: 1
`, ready: "0/1", event: "Readiness probe failed: starting", restsOn: []string{"app: readinessProbe: ExecSync: script: exits 1 after `echo starting; exit 1`"}},
		{name: "exec: the container's env", cmd: `[sleep, "3600"]
    env: [{name: MODE, value: ready}]`, probes: `    readinessProbe:
      exec: {command: [sh, -c, '[ "$MODE" = ready ]']}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"app: readinessProbe: ExecSync: script: exits 0 after"}},
		{name: "exec: an unknown program is assumed to exit 0", probes: `    readinessProbe:
      exec: {command: [mysqladmin, ping]}
      periodSeconds: 1
`, ready: "1/1", restsOn: []string{"app: readinessProbe: ExecSync: assumed: it exits 0: the simulator cannot read `mysqladmin ping`"}},
		{name: "exec postStart hook that fails", probes: `    lifecycle:
      postStart:
        exec: {command: [sh, -c, "exit 3"]}
`, ready: "0/1", event: "FailedPostStartHook", restsOn: []string{"app: postStart: ExecSync: script: exits 3 after `exit 3`"}},
		{name: "host network", hostNet: true, probes: fmt.Sprintf(`    readinessProbe:
      httpGet: {port: %s}
      periodSeconds: 1
`, free), ready: "1/1", restsOn: []string{fmt.Sprintf("the simulator's listener on 127.0.0.1:%s does so for it (host network: 127.0.0.1 stands for the node's IP)", free)}},
		{name: "host network, the port held by another process", hostNet: true, probes: fmt.Sprintf(`    readinessProbe:
      httpGet: {port: %s}
      periodSeconds: 1
`, held), ready: "1/1", restsOn: []string{fmt.Sprintf("but the simulator could not listen there (listen tcp 127.0.0.1:%s: bind: address already in use): the probe reached the process of this machine that holds the port", held)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			o.WaitReady = true
			o.ReadyTimeout = 2 * time.Second
			if tc.ready == "0/1" {
				o.ReadyTimeout = 300 * time.Millisecond
			}
			cmd := tc.cmd
			if cmd == "" {
				cmd = `[sleep, "3600"]`
			}
			e := runAll(t, parse(t, fmt.Sprintf(pod, tc.ann, tc.hostNet, cmd, tc.probes)), newSim(t), o)
			defer teardown(t, e)
			st := e.PodState()
			if st.Ready != tc.ready {
				f, _ := e.Failed()
				t.Fatalf("READY %s, want %s (%s: %s)", st.Ready, tc.ready, f.Name, f.Result.Message)
			}
			for _, s := range e.Steps() {
				for _, d := range s.Result.Details {
					if strings.Contains(d.Value, "not sent") {
						t.Errorf("%s: %s: %s", s.Name, d.Key, d.Value)
					}
				}
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
			all := strings.Join(RestsOn(e.Steps()), "\n")
			for _, want := range tc.restsOn {
				if !strings.Contains(all, want) {
					t.Errorf("rests on:\n%s\nwant %q in it", all, want)
				}
			}
		})
	}
}
