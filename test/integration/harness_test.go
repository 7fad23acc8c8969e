//go:build integration

// Package integration runs the podstep binary against a real containerd (the
// harness of hack/containerd-up.sh), the way a user would, and looks inside
// the runtime through its own small CRI client to check what podstep did.
//
// Environment (set by hack/test.sh):
//
//	PODSTEP_BIN         the podstep binary under test
//	PODSTEP_ENDPOINT    the harness CRI endpoint, unix:///.../containerd.sock
//	PODSTEP_CNI_SUBNET  the harness CNI subnet (default 10.88.77.0/24)
//	PODSTEP_REGISTRY*   the harness registry, its user, password and image (registry_test.go)
//	PODSTEP_RUNTIME     what the harness runs, e.g. "containerd v2.4.2": the runtime must say so
//	CI=true             a missing PODSTEP_BIN/PODSTEP_ENDPOINT fails instead of skipping
//
// The tests share one containerd and run serially. hack/test.sh runs the suite
// once per runtime (Debian's containerd 1.6, containerd 2.x); each test logs
// which (runtime_test.go).
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/test/internal/testenv"
)

const (
	managedLabel  = "podstep.dev/managed"
	defaultSubnet = "10.88.77.0/24"
	// runTimeout bounds one podstep invocation.
	runTimeout = 90 * time.Second
)

// env is what every test needs: the binary and the endpoint.
type env struct {
	bin      string
	endpoint string
	subnet   string
	repo     string // repository root (for testdata/pods)
	// rt is the runtime under test, from its CRI Version.
	rt runtimeUnderTest
	// extraEnv is added to podstep's environment (KEY=value).
	extraEnv []string
}

// setup returns the environment or, when it is missing, skips the test loudly
// (fails it under CI=true). It also makes sure no podstep pod is left on the
// runtime from an earlier test, and removes whatever this test leaves.
func setup(t *testing.T) *env {
	t.Helper()
	v := testenv.Require(t, "INTEGRATION", "run `bash hack/test.sh` as root: it starts the containerd harness and sets them",
		"PODSTEP_BIN", "PODSTEP_ENDPOINT")
	e := &env{bin: v[0], endpoint: v[1], subnet: os.Getenv("PODSTEP_CNI_SUBNET")}
	if e.subnet == "" {
		e.subnet = defaultSubnet
	}
	if _, err := os.Stat(e.bin); err != nil {
		t.Fatalf("PODSTEP_BIN: %v", err)
	}
	e.repo = testenv.RepoRoot()
	e.rt = identifyRuntime(t, e.endpoint)

	c := dialCRI(t, e.endpoint)
	if left := c.managedSandboxes(t); len(left) > 0 {
		t.Logf("removing %d podstep sandbox(es) left by an earlier test", len(left))
		e.cleanup(t)
	}
	// What a test leaves in the runtime fails it (podstep tears down what
	// it made, and a test that keeps a pod removes it), then is removed.
	t.Cleanup(func() {
		if left := c.managedSandboxes(t); len(left) > 0 {
			names := make([]string, 0, len(left))
			for _, sb := range left {
				names = append(names, sb.GetMetadata().GetNamespace()+"/"+sb.GetMetadata().GetName()+" "+sb.GetId()+" "+sb.GetState().String())
			}
			t.Errorf("%d podstep sandbox(es) left in the runtime by this test: %s", len(left), strings.Join(names, ", "))
			e.cleanup(t)
		}
	})
	return e
}

// dirs are a run's --root-dir and --log-dir.
type dirs struct{ root, logs string }

func newDirs(t *testing.T) dirs {
	base := t.TempDir()
	// Registered after TempDir, so it runs before TempDir's removal: a mount
	// podstep left under the dirs (tmpfs of a secret volume, ...) is an
	// error, and is detached so that the removal (and the next test) works.
	t.Cleanup(func() {
		for _, m := range testenv.MountsUnder(base) {
			if !t.Failed() {
				t.Errorf("mount left under the pod dirs after the test: %s", m)
			}
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				t.Logf("umount -l %s: %v", m, err)
			}
		}
	})
	return dirs{root: filepath.Join(base, "root"), logs: filepath.Join(base, "logs")}
}

// assertEmptyDir fails when dir holds anything (a missing dir is empty).
func assertEmptyDir(t *testing.T, what, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Errorf("%s %s: %v", what, dir, err)
		return
	}
	for _, e := range entries {
		t.Errorf("%s: %s left after teardown", what, filepath.Join(dir, e.Name()))
	}
}

// podDir is the kubelet-style pod dir podstep makes: <root>/pods/<uid>.
func (d dirs) podDir(uid string) string { return filepath.Join(d.root, "pods", uid) }

// podLogDir is the pod's log dir: <log-dir>/<ns>_<name>_<uid>.
func (d dirs) podLogDir(ns, name, uid string) string {
	return filepath.Join(d.logs, ns+"_"+name+"_"+uid)
}

// result is one finished podstep invocation.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
	// JSON output (-o json) parsed line by line.
	startEv *startEvent
	steps   []stepEvent
	summary *summaryEvent
	pods    report.PodFolder // folds the step lines' pod_delta
}

// String shows the invocation for a failure message: JSON output as one
// short line per step (full lines would be many KiB each), text as is.
func (r *result) String() string {
	out := r.stdout
	if r.startEv != nil {
		var b strings.Builder
		for _, s := range r.steps {
			fmt.Fprintf(&b, "  step %2d %-12s %-20s %-6s %s", s.ID, s.Stage, s.Name, s.State, s.Summary)
			if s.Reason != "" || s.Message != "" {
				fmt.Fprintf(&b, " [%s: %s]", s.Reason, s.Message)
			}
			b.WriteString("\n")
		}
		if s := r.summary; s != nil {
			fmt.Fprintf(&b, "  summary: outcome %s, exit_code %d, display %s, pod_ip %s, failure %+v", s.Outcome, s.ExitCode, s.Display, s.PodIP, s.Failure)
		}
		out = b.String()
	}
	return fmt.Sprintf("podstep %s\nexit code %d\n--- stdout\n%s\n--- stderr\n%s", strings.Join(r.args, " "), r.code, out, r.stderr)
}

// step returns the JSON step with this name, or nil.
func (r *result) step(name string) *stepEvent {
	for i := range r.steps {
		if r.steps[i].Name == name {
			return &r.steps[i]
		}
	}
	return nil
}

type startEvent struct {
	Type    string `json:"type"`
	Pod     string `json:"pod"`
	Runtime struct {
		Endpoint  string `json:"endpoint"`
		Simulated bool   `json:"simulated"`
		Why       string `json:"why"`
	} `json:"runtime"`
}

type detail struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type callJSON struct {
	Method     string          `json:"method"`
	Request    json.RawMessage `json:"request"`
	Response   json.RawMessage `json:"response"`
	Code       string          `json:"code"`
	Error      string          `json:"error"`
	DurationMs float64         `json:"duration_ms"`
}

type stepEvent struct {
	Type       string     `json:"type"`
	ID         int        `json:"id"`
	Stage      string     `json:"stage"`
	Name       string     `json:"name"`
	Container  string     `json:"container"`
	State      string     `json:"state"`
	Summary    string     `json:"summary"`
	Details    []detail   `json:"details"`
	Warnings   []string   `json:"warnings"`
	Reason     string     `json:"reason"`
	Message    string     `json:"message"`
	Started    time.Time  `json:"started"`
	DurationMs float64    `json:"duration_ms"`
	Calls      []callJSON `json:"calls"`
	// Explanation is the known failure a failed step matches (docs/explain.md).
	Explanation *explanation `json:"explanation"`
	Pod         *struct {
		Phase   string           `json:"phase"`
		Display string           `json:"display"`
		Ready   string           `json:"ready"`
		Status  corev1.PodStatus `json:"status"`
	} `json:"pod"`
}

type failure struct {
	Stage       string       `json:"stage"`
	Step        string       `json:"step"`
	Reason      string       `json:"reason"`
	Message     string       `json:"message"`
	Explanation *explanation `json:"explanation"`
}

// explanation is a failure's entry of podstep's table (docs/explain.md).
type explanation struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Causes  []string `json:"causes"`
	Next    string   `json:"kubelet_next"`
	Confirm []string `json:"confirm"`
	Fix     string   `json:"fix"`
}

type timing struct {
	CreateMs   float64 `json:"create_ms"`
	CRIMs      float64 `json:"cri_ms"`
	WaitMs     float64 `json:"wait_ms"`
	OverheadMs float64 `json:"overhead_ms"`
	TeardownMs float64 `json:"teardown_ms"`
	Calls      int     `json:"calls"`
}

type summaryEvent struct {
	Type     string           `json:"type"`
	Pod      string           `json:"pod"`
	UID      string           `json:"uid"`
	Outcome  string           `json:"outcome"`
	ExitCode int              `json:"exit_code"`
	Failure  *failure         `json:"failure"`
	Display  string           `json:"display"`
	Ready    string           `json:"ready"`
	PodIP    string           `json:"pod_ip"`
	Status   corev1.PodStatus `json:"status"`
	Timing   timing           `json:"timing"`
	Kept     bool             `json:"kept"`
	Leftover *leftover        `json:"leftover"`
}

// leftover is what a teardown that did not finish left.
type leftover struct {
	Sandbox    string   `json:"sandbox"`
	Containers []string `json:"containers"`
	Dirs       []string `json:"dirs"`
	Mounts     []string `json:"mounts"`
}

// podstep runs the binary with args and returns what it did; it never fails
// the test by itself (the caller asserts the exit code).
func (e *env) podstep(t *testing.T, args ...string) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), e.extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := &result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("podstep did not finish within %s\n%s", runTimeout, r)
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("podstep %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	t.Logf("podstep %s → exit %d in %s", strings.Join(args, " "), r.code, time.Since(start).Round(time.Millisecond))
	if hasArg(args, "json") {
		r.parseJSON(t)
	}
	return r
}

func hasArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

func (r *result) parseJSON(t *testing.T) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if err := r.parseLine(sc.Bytes()); err != nil {
			t.Fatalf("JSON output line %q: %v\n%s", sc.Text(), err, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading JSON output: %v", err)
	}
}

func (r *result) parseLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return err
	}
	switch head.Type {
	case "start":
		r.startEv = &startEvent{}
		return json.Unmarshal(line, r.startEv)
	case "step":
		var s stepEvent
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		// -o json has the whole pod on the first step line and what
		// changed on most others (pod_delta): Pod is the whole pod after
		// every step, folded as podstep's readers fold it.
		var sj report.StepJSON
		if err := json.Unmarshal(line, &sj); err != nil {
			return err
		}
		if err := r.pods.Fold(&sj); err != nil {
			return fmt.Errorf("step %d: %w", sj.ID, err)
		}
		if sj.Pod != nil {
			b, err := json.Marshal(sj.Pod)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &s.Pod); err != nil {
				return err
			}
		}
		r.steps = append(r.steps, s)
	case "summary":
		r.summary = &summaryEvent{}
		return json.Unmarshal(line, r.summary)
	default:
		return fmt.Errorf("unknown type %q", head.Type)
	}
	return nil
}

// run is `podstep run --auto -o json -f FILE -r ENDPOINT --grace-period 0
// --root-dir ... --log-dir ...` plus extra flags. It checks the JSON stream's
// shape: a start event on the real (not simulated) runtime and a summary
// whose exit_code is the process's.
func (e *env) run(t *testing.T, d dirs, file string, extra ...string) *result {
	t.Helper()
	args := append([]string{"run", "--auto", "-o", "json", "-f", file, "-r", e.endpoint,
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}, extra...)
	r := e.podstep(t, args...)
	e.checkStream(t, r)
	return r
}

func (e *env) checkStream(t *testing.T, r *result) {
	t.Helper()
	if r.startEv == nil {
		t.Fatalf("no {\"type\":\"start\"} line\n%s", r)
	}
	if r.startEv.Runtime.Simulated {
		t.Fatalf("podstep used the SIMULATED runtime, not %s\n%s", e.endpoint, r)
	}
	if r.startEv.Runtime.Endpoint != e.endpoint {
		t.Errorf("start.runtime.endpoint = %q, want %q", r.startEv.Runtime.Endpoint, e.endpoint)
	}
	if r.summary == nil {
		t.Fatalf("no {\"type\":\"summary\"} line\n%s", r)
	}
	if r.summary.ExitCode != r.code {
		t.Errorf("summary.exit_code = %d, process exit code %d", r.summary.ExitCode, r.code)
	}
}

// mustRun runs the pod and requires it to be running (exit 0).
func (e *env) mustRun(t *testing.T, d dirs, file string, extra ...string) *result {
	t.Helper()
	r := e.run(t, d, file, extra...)
	if r.code != 0 || r.summary.Outcome != "running" {
		t.Fatalf("want exit 0 and outcome running, got exit %d outcome %q\n%s", r.code, r.summary.Outcome, r)
	}
	return r
}

// cleanup runs `podstep cleanup` and requires it to succeed.
func (e *env) cleanup(t *testing.T) {
	t.Helper()
	r := e.podstep(t, "cleanup", "-r", e.endpoint, "--grace-period", "0")
	if r.code != 0 {
		t.Errorf("podstep cleanup failed\n%s", r)
	}
}

// pod returns testdata/pods/NAME.yaml of the repository.
func (e *env) pod(name string) string { return filepath.Join(e.repo, "testdata", "pods", name+".yaml") }

// local returns test/integration/testdata/NAME.yaml.
func (e *env) local(name string) string {
	return filepath.Join(e.repo, "test", "integration", "testdata", name+".yaml")
}

// tree lists path and everything below it, for a failure message.
func tree(path string) []string {
	var entries []string
	// Never fails: the function lists what it cannot read too, and returns nil.
	_ = filepath.Walk(path, func(p string, _ os.FileInfo, _ error) error {
		entries = append(entries, p)
		return nil
	})
	return entries
}

// assertGone fails when path exists.
func assertGone(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s %s still exists after teardown: %v", what, path, tree(path))
	} else if !os.IsNotExist(err) {
		t.Errorf("%s %s: %v", what, path, err)
	}
}

// assertNothingLeft checks the runtime has no podstep sandbox or container
// and the pod's dirs are gone.
func (e *env) assertNothingLeft(t *testing.T, d dirs, ns, name, uid string) {
	t.Helper()
	c := dialCRI(t, e.endpoint)
	if sb := c.managedSandboxes(t); len(sb) > 0 {
		var ids []string
		for _, s := range sb {
			ids = append(ids, fmt.Sprintf("%s (%s/%s, %s)", s.Id[:13], s.Metadata.Namespace, s.Metadata.Name, s.State))
		}
		t.Errorf("ListPodSandbox %s=true: %d left: %v", managedLabel, len(sb), ids)
	}
	if cs := c.managedContainers(t); len(cs) > 0 {
		var ids []string
		for _, c := range cs {
			ids = append(ids, fmt.Sprintf("%s (%s, %s)", c.Id[:13], c.Metadata.Name, c.State))
		}
		t.Errorf("ListContainers %s=true: %d left: %v", managedLabel, len(cs), ids)
	}
	if uid == "" {
		t.Errorf("no pod UID in the summary: cannot check the pod dirs")
		return
	}
	for _, m := range testenv.MountsUnder(filepath.Dir(d.root)) {
		t.Errorf("mount left after teardown: %s", m)
	}
	assertGone(t, "pod dir", d.podDir(uid))
	assertGone(t, "pod log dir", d.podLogDir(ns, name, uid))
}

// settle waits (up to 3 s) until the runtime lists no podstep sandbox, then
// removes whatever is still there, so one failed case does not spill into
// the next.
func (e *env) settle(t *testing.T) {
	t.Helper()
	c := dialCRI(t, e.endpoint)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(c.managedSandboxes(t)) == 0 {
			return
		}
	}
	e.cleanup(t)
}

// interrupt sends SIGINT to a running podstep.
func interrupt(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGINT) }
