//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// benchSeries is a figure of `podstep bench -o json` (docs/bench.md: the JSON of
// podstep bench).
type benchSeries struct {
	Name    string    `json:"name"`
	N       int       `json:"n"`
	Min     float64   `json:"min_ms"`
	P50     float64   `json:"p50_ms"`
	P90     float64   `json:"p90_ms"`
	P99     float64   `json:"p99_ms"`
	Max     float64   `json:"max_ms"`
	PerPod  float64   `json:"per_pod"`
	Samples []float64 `json:"samples_ms"`
}

type benchJSON struct {
	Schema    string `json:"schema"`
	Simulated bool   `json:"simulated"`
	Runtime   struct {
		Endpoint string `json:"endpoint"`
		Name     string `json:"name"`
		Version  string `json:"version"`
	} `json:"runtime"`
	Levels []struct {
		Concurrency int           `json:"concurrency"`
		Pods        int           `json:"pods"`
		Failed      int           `json:"failed"`
		Phases      []benchSeries `json:"phases"`
		Methods     []benchSeries `json:"methods"`
		SLI         benchSeries   `json:"pod_start_sli_duration"`
		Total       benchSeries   `json:"pod_start_total_duration"`
		Floor       benchSeries   `json:"cri_floor"`
		Own         benchSeries   `json:"own"`
	} `json:"levels"`
	Comparison *struct {
		Regressions int `json:"regressions"`
		Rows        []struct {
			Name       string `json:"name"`
			Regression bool   `json:"regression"`
		} `json:"rows"`
	} `json:"comparison"`
}

// TestBench runs `podstep bench -n 3` (2 at once) on the harness
// containerd through the binary: every phase of the hello pod and every
// CRI method it sends has ordered percentiles, the SLIs and the CRI floor
// are there, the result names the runtime, and nothing is left in the
// runtime or on disk. Then `--compare` against a baseline made from this
// run's own JSON with every sample divided by 10 (a runtime ten times
// faster) must exit 1 with regressions (that run measures 5 pods: see
// below).
func TestBench(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	args := []string{"bench", "-f", e.pod("hello"), "-r", e.endpoint, "-n", "3", "--warmup", "1", "--concurrency", "2",
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs, "--output=json"} // not "-o json": e.podstep would read it as run's JSON lines
	r := e.podstep(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit 0\n%s", r)
	}
	var res benchJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("output not JSON: %v\n%s", err, r)
	}
	if res.Simulated || res.Runtime.Endpoint != e.endpoint || res.Runtime.Name != e.rt.name || res.Runtime.Version != e.rt.version {
		t.Errorf("runtime %+v, simulated %v: want %s at %s", res.Runtime, res.Simulated, e.rt, e.endpoint)
	}
	if len(res.Levels) != 1 || res.Levels[0].Pods != 3 || res.Levels[0].Failed != 0 || res.Levels[0].Concurrency != 2 {
		t.Fatalf("levels %+v: want one of 3 pods, 2 at once, none failed", res.Levels)
	}
	l := res.Levels[0]
	ordered := func(s benchSeries) {
		t.Helper()
		if s.N == 0 || len(s.Samples) != s.N || !(0 <= s.Min && s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
			t.Errorf("%s: %+v: want samples and min ≤ p50 ≤ p90 ≤ p99 ≤ max", s.Name, s)
		}
	}
	var names []string
	for _, s := range l.Phases {
		names = append(names, s.Name)
		ordered(s)
	}
	if got, want := strings.Join(names, " "), "admit dirs volumes pull-secrets sandbox pull create start teardown"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	methods := map[string]bool{}
	for _, s := range l.Methods {
		methods[s.Name] = true
		ordered(s)
	}
	for _, m := range []string{"Version", "Status", "RunPodSandbox", "PodSandboxStatus", "ImageStatus", "CreateContainer", "StartContainer", "StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"} {
		if !methods[m] {
			t.Errorf("no figures for CRI method %s", m)
		}
	}
	for _, s := range []benchSeries{l.SLI, l.Total, l.Floor, l.Own} {
		ordered(s)
	}
	// A real sandbox (CNI included) takes milliseconds, not microseconds.
	if l.Floor.P50 < 5 || l.Total.P50 < l.SLI.P50 {
		t.Errorf("CRI floor p50 %.3fms, total %.3fms, SLI %.3fms: not a real runtime's", l.Floor.P50, l.Total.P50, l.SLI.P50)
	}
	e.assertBenchLeftNothing(t, d)

	// A baseline ten times faster than this run: the next run regresses.
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("bench --output=json: %v", err)
	}
	scaleSamples(raw["levels"], 0.1)
	base := filepath.Join(t.TempDir(), "base.json")
	data, _ := json.Marshal(raw)
	if err := os.WriteFile(base, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// 5 pods, not 3: the U test cannot tell 3 samples from 3 apart at
	// p < 0.05 (its smallest p is 0.1); 5 against 3 can (0.036).
	args[6] = "5"
	args = append(args, "--compare", base)
	r = e.podstep(t, args...)
	if r.code != 1 {
		t.Fatalf("--compare against a baseline 10× faster: want exit 1\n%s", r)
	}
	var cmp benchJSON
	if err := json.Unmarshal([]byte(r.stdout), &cmp); err != nil || cmp.Comparison == nil || cmp.Comparison.Regressions == 0 {
		t.Fatalf("no regressions in the comparison (%v)\n%s", err, r)
	}
	if !strings.Contains(r.stderr, "regression(s) against") {
		t.Errorf("stderr does not say why it exits 1: %q", r.stderr)
	}
	e.assertBenchLeftNothing(t, d)
}

// scaleSamples multiplies every samples_ms of a bench JSON by f, and its
// order statistics with them.
func scaleSamples(v any, f float64) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			scaleSamples(e, f)
		}
	case map[string]any:
		for k, e := range x {
			switch {
			case k == "samples_ms":
				for i, s := range e.([]any) {
					e.([]any)[i] = s.(float64) * f
				}
			case strings.HasSuffix(k, "_ms"):
				if n, ok := e.(float64); ok {
					x[k] = n * f
				}
			default:
				scaleSamples(e, f)
			}
		}
	}
}

// assertBenchLeftNothing: no podstep sandbox or container in the runtime,
// no pod dir, log dir or mount on disk.
func (e *env) assertBenchLeftNothing(t *testing.T, d dirs) {
	t.Helper()
	c := dialCRI(t, e.endpoint)
	if sb := c.managedSandboxes(t); len(sb) > 0 {
		t.Errorf("ListPodSandbox %s=true: %d left after the bench", managedLabel, len(sb))
	}
	if cs := c.managedContainers(t); len(cs) > 0 {
		t.Errorf("ListContainers %s=true: %d left after the bench", managedLabel, len(cs))
	}
	for _, m := range testenv.MountsUnder(filepath.Dir(d.root)) {
		t.Errorf("mount left after the bench: %s", m)
	}
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
	assertEmptyDir(t, "pod log dirs", d.logs)
}

// TestBenchInterrupted: SIGINT while pods are in the runtime (3 at once):
// bench tears every pod down, says so, exits 130, and leaves nothing.
func TestBenchInterrupted(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	cmd := exec.Command(e.bin, "bench", "-f", e.pod("hello"), "-r", e.endpoint, "-n", "30", "--warmup", "0", "--concurrency", "3",
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs, "--output=json")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := dialCRI(t, e.endpoint)
	seen := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && seen == 0; time.Sleep(20 * time.Millisecond) {
		seen = len(c.managedSandboxes(t))
	}
	if seen == 0 {
		_ = cmd.Process.Kill() // the test fails either way
		_ = cmd.Wait()
		t.Fatalf("no podstep sandbox appeared in 30 s; no SIGINT sent\n%s", stderr.String())
	}
	if err := interrupt(cmd); err != nil {
		t.Fatalf("SIGINT: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // its exit code is checked below
	select {
	case <-done:
	case <-time.After(runTimeout):
		_ = cmd.Process.Kill() // the test fails either way
		t.Fatalf("bench did not end within %s of SIGINT", runTimeout)
	}
	t.Logf("SIGINT with %d sandbox(es) in the runtime; stderr: %s", seen, stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted: torn down") {
		t.Errorf("stderr does not say \"interrupted: torn down\": %q", stderr.String())
	}
	e.assertBenchLeftNothing(t, d)
	if t.Failed() {
		e.settle(t)
	}
}

// TestBenchSecondInterrupt: with containers running and a 10 s grace
// period (the hello pod's sh ignores SIGTERM, so StopContainer waits it
// out), a first SIGINT starts the teardowns and a second one abandons
// them: exit 4 at once, and stderr lists every pod's leftovers for
// `podstep cleanup`, which removes them.
func TestBenchSecondInterrupt(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	cmd := exec.Command(e.bin, "bench", "-f", e.pod("hello"), "-r", e.endpoint, "-n", "10", "--warmup", "0", "--concurrency", "2",
		"--grace-period", "10", "--root-dir", d.root, "--log-dir", d.logs, "--output=json")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := dialCRI(t, e.endpoint)
	running := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && running == 0; time.Sleep(20 * time.Millisecond) {
		for _, ct := range c.managedContainers(t) {
			if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running++
			}
		}
	}
	if running == 0 {
		_ = cmd.Process.Kill() // the test fails either way
		_ = cmd.Wait()
		t.Fatalf("no podstep container ran within 30 s; no SIGINT sent\n%s", stderr.String())
	}
	if err := interrupt(cmd); err != nil {
		t.Errorf("first SIGINT: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // the teardowns are in StopContainer now
	if err := interrupt(cmd); err != nil {
		t.Errorf("second SIGINT: %v", err)
	}
	second := time.Now()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // its exit code is checked below
	select {
	case <-done:
	case <-time.After(runTimeout):
		_ = cmd.Process.Kill() // the test fails either way
		t.Fatalf("bench did not end within %s of the second SIGINT", runTimeout)
	}
	took := time.Since(second)
	t.Logf("exit %d %s after the second SIGINT; stderr: %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Errorf("exit %d, want 4 (something left)", code)
	}
	if took > 2*time.Second {
		t.Errorf("bench took %s to exit after the second SIGINT", took.Round(time.Millisecond))
	}
	left := len(c.managedSandboxes(t))
	if left == 0 {
		t.Errorf("no sandbox left: the teardowns were not abandoned")
	}
	if n := strings.Count(stderr.String(), "sandbox "); !strings.Contains(stderr.String(), "teardown abandoned; left: ") || n < left {
		t.Errorf("stderr names %d sandbox(es), %d left in the runtime: want each listed for `podstep cleanup`", n, left)
	}
	e.cleanup(t)
	e.assertBenchLeftNothing(t, d)
}
