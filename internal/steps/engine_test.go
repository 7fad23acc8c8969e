package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
)

// repoFile is a path relative to the repository root.
func repoFile(p string) string { return filepath.Join("..", "..", p) }

// teardown tears e down at the end of a test (defer teardown(t, e)) and
// fails the test when that fails.
func teardown(t testing.TB, e *Engine) {
	t.Helper()
	if err := e.Teardown(context.Background()); err != nil {
		t.Errorf("teardown: %v", err)
	}
}

// newSim starts a simulated runtime and a client for it.
func newSim(t *testing.T) *cri.Client {
	t.Helper()
	return simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond})
}

func load(t *testing.T, file string) *manifest.Bundle {
	t.Helper()
	b, err := manifest.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, yaml string) *manifest.Bundle {
	t.Helper()
	b, err := manifest.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testOptions(t *testing.T) Options {
	root := t.TempDir()
	zero := int64(0)
	return Options{
		Config:       podcfg.Options{RootDir: filepath.Join(root, "kubelet"), LogDir: filepath.Join(root, "logs"), CgroupDriver: "cgroupfs"},
		GracePeriod:  &zero,
		PollInterval: 5 * time.Millisecond,
		InitTimeout:  5 * time.Second,
		MaxRestarts:  2,
		BackoffScale: 0.001,
		Settle:       200 * time.Millisecond,
		Simulated:    true,
	}
}

// TestPlanOrder checks the plan of each test pod: stages, step names and
// the CRI methods each step will send, against golden files.
func TestPlanOrder(t *testing.T) {
	for _, name := range []string{"hello", "init", "hooks", "env", "hostport"} {
		t.Run(name, func(t *testing.T) {
			e := New(load(t, repoFile("testdata/pods/"+name+".yaml")), nil, testOptions(t))
			var b strings.Builder
			for _, s := range e.Steps() {
				var methods []string
				for _, r := range s.Requests {
					methods = append(methods, r.Method)
				}
				fmt.Fprintf(&b, "%2d %-12s %-22s %s\n", s.ID, s.Stage, s.Name, strings.Join(methods, ","))
				if s.Mirrors == "" || s.Explain == "" {
					t.Errorf("step %s: missing Mirrors or Explain", s.Name)
				}
			}
			golden.Check(t, repoFile("testdata/plans/"+name+".golden"), b.String())
		})
	}
}

// runAll runs every creation step and returns the engine.
func runAll(t *testing.T, b *manifest.Bundle, c *cri.Client, o Options) *Engine {
	t.Helper()
	e := New(b, c, o)
	for !e.Finished() {
		if err := e.Continue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// nth is the index of the k-th (from 1) m in ms, -1 when there are fewer.
func nth(ms []string, m string, k int) int {
	for i, x := range ms {
		if x == m {
			if k--; k == 0 {
				return i
			}
		}
	}
	return -1
}

// without drops the methods in skip from ms.
func without(ms []string, skip ...string) []string {
	var out []string
	for _, m := range ms {
		if !slices.Contains(skip, m) {
			out = append(out, m)
		}
	}
	return out
}

// methods lists the CRI methods of calls, dropping the ones in skip.
func methods(calls []cri.Call, skip ...string) []string {
	var out []string
next:
	for _, c := range calls {
		for _, s := range skip {
			if c.Method == s {
				continue next
			}
		}
		out = append(out, c.Method)
	}
	return out
}

// traceMethods reads the CREATE phase of a kubelet reference trace and
// returns its methods in order, without the polling calls the trace folds.
func traceMethods(t *testing.T, name string, skip ...string) []string {
	t.Helper()
	data, err := os.ReadFile(repoFile("testdata/kubelet-traces/" + name + ".calls.txt"))
	if err != nil {
		t.Fatalf("reference trace: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "TEARDOWN phase") {
			break
		}
		if !strings.HasPrefix(line, "+") {
			continue
		}
		f := strings.Fields(line)
		// "+ 16.8ms [ 229.14ms] RunPodSandbox ..." → the method follows the bracketed duration.
		for i, w := range f {
			if strings.HasSuffix(w, "ms]") && i+1 < len(f) {
				m := f[i+1]
				keep := true
				for _, s := range skip {
					if m == s {
						keep = false
					}
				}
				if keep {
					out = append(out, m)
				}
				break
			}
		}
	}
	return out
}

// TestCallOrderMatchesKubeletTrace compares the CRI calls podstep sends to
// create the trace pods with those a real kubelet v1.37 sent. Calls the
// kubelet sends on its own timers (Version, Status, List*, ContainerStatus
// for running containers) are left out of both sides; the README explains
// the remaining differences.
func TestCallOrderMatchesKubeletTrace(t *testing.T) {
	periodic := []string{"Version", "Status", "RuntimeConfig", "ListPodSandbox", "ListContainers", "ContainerStatus"}
	for _, name := range []string{"simple", "init"} {
		t.Run(name, func(t *testing.T) {
			// After the last StartContainer comes the relist SyncPod asks
			// for (up to the next Version); then the kubelet only polls.
			full := traceMethods(t, name)
			start := len(full) - 1
			for full[start] != "StartContainer" {
				start--
			}
			last := start + 1 + slices.Index(full[start+1:], "Version")
			want := without(full[:last], periodic...)
			// The init container runs long enough for a relist to see it
			// running before one sees it exit, as the kubelet's did (two
			// PodSandboxStatus calls: one per PLEG event). With newSim's
			// 20 ms, a relist delayed by a loaded machine (the race pass)
			// saw only the exit.
			c := simtest.Client(t, sim.Options{InitRunTime: 500 * time.Millisecond})
			e := runAll(t, load(t, repoFile("testdata/kubelet-traces/"+name+".yaml")), c, testOptions(t))
			if f, failed := e.Failed(); failed {
				t.Fatalf("step %s failed: %s", f.Name, f.Result.Message)
			}
			got := methods(c.Calls(), periodic...)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("call order differs from the kubelet trace\n kubelet: %v\n podstep: %v", want, got)
			}
			// After each StartContainer, the relist SyncPod asks for, periodic
			// methods included: ListPodSandbox, ListContainers (both
			// pod-filtered), PodSandboxStatus, a ContainerStatus per container.
			all := methods(c.Calls())
			k := 0
			for i, m := range full {
				if m != "StartContainer" {
					continue
				}
				k++
				want := full[i+1 : i+1+slices.Index(full[i+1:], "Version")]
				j := nth(all, "StartContainer", k)
				if j < 0 {
					t.Fatalf("podstep sent fewer than %d StartContainer", k)
				}
				if got := all[j+1 : min(len(all), j+1+len(want))]; strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("after StartContainer #%d\n kubelet: %v\n podstep: %v", k, want, got)
				}
			}
		})
	}
}

// TestHelloRunsAndTearsDown runs the hello pod and checks teardown leaves
// no sandbox, container or directory behind.
func TestHelloRunsAndTearsDown(t *testing.T) {
	c := newSim(t)
	o := testOptions(t)
	e := runAll(t, load(t, repoFile("testdata/pods/hello.yaml")), c, o)
	if _, failed := e.Failed(); failed {
		t.Fatal("hello failed")
	}
	st := e.PodState()
	if st.Display != "Running" || st.Ready != "1/1" || st.Status.PodIP == "" {
		t.Fatalf("pod state = %s %s ip=%q, want Running 1/1 with an IP", st.Display, st.Ready, st.Status.PodIP)
	}
	podDir := filepath.Join(o.Config.RootDir, "pods", string(e.Pod().UID))
	for _, sub := range []string{"volumes", "plugins", "containers", "etc-hosts"} {
		if _, err := os.Stat(filepath.Join(podDir, sub)); err != nil {
			t.Errorf("pod dir: %v", err)
		}
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sbs, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrs, err := c.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sbs.Items) != 0 || len(ctrs.Containers) != 0 {
		t.Errorf("after teardown: %d sandboxes, %d containers left", len(sbs.Items), len(ctrs.Containers))
	}
	for _, d := range []string{podDir, filepath.Join(o.Config.LogDir, "default_hello_"+string(e.Pod().UID))} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists after teardown (err=%v)", d, err)
		}
	}
	for _, s := range e.Steps() {
		if s.Stage == StageTeardown && s.State != Done {
			t.Errorf("teardown step %s: %s %s", s.Name, s.State, s.Result.Message)
		}
	}
	// A second run of the same manifest must work: the sandbox name is free again.
	e2 := runAll(t, load(t, repoFile("testdata/pods/hello.yaml")), c, o)
	if f, failed := e2.Failed(); failed {
		t.Fatalf("second run failed at %s: %s", f.Name, f.Result.Message)
	}
	if err := e2.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
}

const faultPod = `apiVersion: v1
kind: Pod
metadata:
  name: faulty
  annotations:
    %s
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo setup"]
  containers:
  - name: app
    image: %s
    imagePullPolicy: %s
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "echo hi"]
`

// TestFailures drives the simulated runtime's faults through the engine and
// checks the failed step, the kubelet reason, the pod's STATUS, and that
// the steps after it are skipped.
func TestFailures(t *testing.T) {
	busybox := "docker.io/library/busybox:1.35"
	cases := []struct {
		name, annotation, image, policy string
		step, reason, display           string
	}{
		{"init exits 3", `sim.podstep.dev/exit-code.setup: "3"`, busybox, "IfNotPresent", "wait/setup", reason.Error, "Init:Error"},
		{"sandbox refused", `sim.podstep.dev/sandbox-error: "no IPs left"`, busybox, "IfNotPresent", "run-sandbox", reason.ErrCreatePodSandbox, "Init:0/1"},
		{"create refused", `sim.podstep.dev/create-error.app: "bad mount"`, busybox, "IfNotPresent", "create/app", reason.ErrCreateContainer, "CreateContainerError"},
		{"start refused", `sim.podstep.dev/start-error.app: "exec: not found"`, busybox, "IfNotPresent", "start/app", reason.ErrRunContainer, "RunContainerError"},
		{"pull fails", `sim.podstep.dev/pull-error: "docker.io/library/nginx:1=401 Unauthorized"`, "docker.io/library/nginx:1", "IfNotPresent", "pull/app", reason.ErrImagePull, "ErrImagePull"},
		{"never pull", `sim.podstep.dev/x: "y"`, "docker.io/library/absent:1", "Never", "pull/app", reason.ErrImageNeverPull, "ErrImageNeverPull"},
		{"hook fails", `sim.podstep.dev/exec-exit-code.app: "7"`, busybox, "IfNotPresent", "post-start/app", reason.ErrPostStartHook, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newSim(t)
			b := parse(t, fmt.Sprintf(faultPod, tc.annotation, tc.image, tc.policy))
			e := runAll(t, b, c, testOptions(t))
			f, failed := e.Failed()
			if !failed {
				t.Fatal("pod did not fail")
			}
			if f.Name != tc.step || f.Result.Reason != tc.reason {
				t.Errorf("failed at %s with %s (%s), want %s with %s", f.Name, f.Result.Reason, f.Result.Message, tc.step, tc.reason)
			}
			if f.Result.Message == "" {
				t.Error("failed step has no message")
			}
			if st := e.PodState(); tc.display != "" && st.Display != tc.display {
				t.Errorf("STATUS = %s, want %s", st.Display, tc.display)
			}
			for _, s := range e.Steps() {
				if s.ID > f.ID && s.State != Skipped {
					t.Errorf("step %s after the failure is %s, want skipped", s.Name, s.State)
				}
			}
			if err := e.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
			sbs, _ := c.ListPodSandbox(context.Background(), nil)
			if len(sbs.GetItems()) != 0 {
				t.Errorf("%d sandboxes left after teardown", len(sbs.Items))
			}
		})
	}
}

// TestBreakpointsAndNext checks Continue stops before a stage breakpoint,
// Next runs exactly one step, and Retry re-runs a failed step.
func TestBreakpointsAndNext(t *testing.T) {
	c := newSim(t)
	e := New(load(t, repoFile("testdata/pods/hello.yaml")), c, testOptions(t))
	defer teardown(t, e)
	ctx := context.Background()
	s, err := e.Next(ctx)
	if err != nil || s.Name != "admit" || s.State != Done {
		t.Fatalf("Next = %s %s %v, want admit done", s.Name, s.State, err)
	}
	e.ToggleBreakStage(StageSandbox)
	if err := e.Continue(ctx); err != nil {
		t.Fatal(err)
	}
	next, _ := e.NextStep()
	if next.Name != "runtime-status" {
		t.Fatalf("Continue stopped before %s, want runtime-status (first sandbox step)", next.Name)
	}
	if len(c.Calls()) != 0 {
		t.Fatalf("%d CRI calls before the sandbox stage, want 0", len(c.Calls()))
	}
	// The pending step's requests are what will be sent.
	if len(next.Requests) != 5 || next.Requests[0].Method != "Version" {
		t.Fatalf("runtime-status requests = %v", next.Requests)
	}
	if err := e.Continue(ctx); err != nil {
		t.Fatal(err)
	}
	if !e.Finished() {
		t.Fatal("Continue from a breakpoint did not run to the end")
	}
	if err := e.Retry(); err == nil {
		t.Error("Retry with no failed step did not fail")
	}
}

func TestRetryAfterFailure(t *testing.T) {
	c := newSim(t)
	b := parse(t, fmt.Sprintf(faultPod, `sim.podstep.dev/start-error.app: "exec: sleep: not found"`, "docker.io/library/busybox:1.35", "IfNotPresent"))
	e := runAll(t, b, c, testOptions(t))
	f, failed := e.Failed()
	if !failed || f.Name != "start/app" {
		t.Fatalf("want a start failure, got %v %s", failed, f.Name)
	}
	if err := e.Retry(); err != nil {
		t.Fatal(err)
	}
	// As the kubelet does, a new container (attempt 1) is made from the image step.
	next, _ := e.NextStep()
	if next.Name != "pull/app" || next.State != Pending {
		t.Fatalf("after Retry next step = %s %s, want pull/app pending", next.Name, next.State)
	}
	if _, err := e.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	create, err := e.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := create.Calls[len(create.Calls)-1].Request.(*runtimeapi.CreateContainerRequest)
	if req.Config.Metadata.Attempt != 1 || req.Config.LogPath != "app/1.log" {
		t.Errorf("retry created attempt %d log %s, want attempt 1 log app/1.log", req.Config.Metadata.Attempt, req.Config.LogPath)
	}
	if st := e.PodState(); st.Restarts != 1 {
		t.Errorf("RESTARTS = %d, want 1", st.Restarts)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctrs, _ := c.ListContainers(context.Background(), nil)
	if n := len(ctrs.GetContainers()); n != 0 {
		t.Errorf("%d containers left after teardown (both attempts must go)", n)
	}
}

// TestSecretsRedacted checks the registry password and Secret-sourced env
// values never reach recorded calls.
func TestSecretsRedacted(t *testing.T) {
	const password = "s3cr3t-PASSWORD-x9"
	const token = "api-TOKEN-value-42"
	yaml := `apiVersion: v1
kind: Pod
metadata:
  name: private
spec:
  imagePullSecrets: [{name: regcred}]
  containers:
  - name: app
    image: registry.example:5000/team/app:1
    imagePullPolicy: Always
    command: ["sleep", "3600"]
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: api, key: token}
---
apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"registry.example:5000":{"username":"bob","password":"` + password + `"}}}'
---
apiVersion: v1
kind: Secret
metadata: {name: api}
stringData:
  token: ` + token + `
`
	c := newSim(t)
	e := runAll(t, parse(t, yaml), c, testOptions(t))
	defer teardown(t, e)
	if f, failed := e.Failed(); failed {
		t.Fatalf("failed at %s: %s", f.Name, f.Result.Message)
	}
	var sawAuth bool
	for _, call := range c.Calls() {
		text := fmt.Sprint(call.Request, call.Response)
		if strings.Contains(text, password) || strings.Contains(text, token) {
			t.Errorf("%s recorded a secret: %s", call.Method, text)
		}
		if r, ok := call.Request.(*runtimeapi.PullImageRequest); ok && r.Auth != nil && r.Auth.Username == "bob" && r.Auth.Password == cri.Mask {
			sawAuth = true
		}
	}
	if !sawAuth {
		t.Error("PullImage did not carry the matched credentials (masked in the record)")
	}
	for _, s := range e.Steps() {
		text := fmt.Sprint(s.Result)
		if strings.Contains(text, password) || strings.Contains(text, token) {
			t.Errorf("step %s shows a secret: %s", s.Name, text)
		}
	}
}

// BenchmarkHelloOverhead runs the hello pod against the simulated runtime
// and reports podstep's own time per pod (wall time minus time inside CRI
// calls) next to the total.
func BenchmarkHelloOverhead(b *testing.B) {
	dir, err := os.MkdirTemp("", "bench-sim")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := sim.StartWithOptions(dir, sim.Options{Dirs: []string{os.TempDir()}}) // the log dir is b.TempDir()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	bundle, err := manifest.Load(repoFile("testdata/pods/hello.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	zero := int64(0)
	var overhead, inCalls time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := cri.Dial(srv.Endpoint(), "", cri.Options{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		e := New(bundle, c, Options{Config: podcfg.Options{RootDir: root, LogDir: root + "/logs"}, GracePeriod: &zero})
		if err := e.Continue(context.Background()); err != nil {
			b.Fatal(err)
		}
		if _, failed := e.Failed(); failed {
			b.Fatal("hello failed")
		}
		wall := time.Since(start)
		overhead += wall - c.TimeInCalls()
		inCalls += c.TimeInCalls()
		b.StopTimer()
		teardown(b, e)
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(overhead.Nanoseconds())/float64(b.N), "overhead-ns/op")
	b.ReportMetric(float64(inCalls.Nanoseconds())/float64(b.N), "cri-ns/op")
}

// TestSecondRunLeavesKeptPodAlone: a pod kept by one run is not touched by
// a second run of the same manifest, which fails with PodAlreadyExists.
func TestSecondRunLeavesKeptPodAlone(t *testing.T) {
	c := newSim(t)
	o := testOptions(t)
	first := runAll(t, load(t, repoFile("testdata/pods/init.yaml")), c, o)
	if _, failed := first.Failed(); failed {
		t.Fatal("first run failed")
	}
	ready := filepath.Join(o.Config.RootDir, "pods", string(first.Pod().UID), "etc-hosts")
	second := runAll(t, load(t, repoFile("testdata/pods/init.yaml")), c, o)
	f, failed := second.Failed()
	if !failed || f.Name != "dirs" || f.Result.Reason != reason.PodAlreadyExists {
		t.Fatalf("second run: failed=%v at %s %s, want dirs PodAlreadyExists", failed, f.Name, f.Result.Reason)
	}
	if err := second.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ready); err != nil {
		t.Errorf("the kept pod's files were removed by the second run: %v", err)
	}
	sbs, _ := c.ListPodSandbox(context.Background(), nil)
	if len(sbs.GetItems()) != 1 {
		t.Errorf("%d sandboxes, want the kept one", len(sbs.GetItems()))
	}
	if err := first.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
