package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/bench"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
	"github.com/podstep/podstep/internal/sim"
)

// benchJSON runs `podstep bench --sim -o json` with args and decodes it.
func benchJSON(t *testing.T, args ...string) (int, *bench.Output, string) {
	t.Helper()
	root, logs := dirs(t)
	all := append([]string{"bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "--grace-period", "0", "-o", "json",
		"--root-dir", root, "--log-dir", logs}, args...)
	code, out, errOut := run(t, all...)
	var res bench.Output
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d, output not JSON: %v\n%s\n%s", code, err, out, errOut)
	}
	// Nothing left on disk: every pod's dir and log dir were removed.
	for _, d := range []string{filepath.Join(root, "pods"), logs} {
		if entries, _ := os.ReadDir(d); len(entries) > 0 {
			t.Errorf("%s: %d entries left after the bench (first %s)", d, len(entries), entries[0].Name())
		}
	}
	return code, &res, errOut
}

func checkOrdered(t *testing.T, s bench.Series) {
	t.Helper()
	if s.N == 0 || len(s.Samples) != s.N {
		t.Errorf("%s: n %d, %d samples", s.Name, s.N, len(s.Samples))
		return
	}
	if !(s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
		t.Errorf("%s: percentiles not ordered: %+v", s.Name, s)
	}
}

// TestBenchSimulated runs 4 pods, 3 at once, on the simulated runtime:
// each pod has its own name and UID (3 pods with one name would collide in
// the runtime), every phase of the hello pod and every CRI method is
// reported with ordered percentiles, the result says it is simulated, and
// nothing is left.
func TestBenchSimulated(t *testing.T) {
	code, res, errOut := benchJSON(t, "-n", "4", "--warmup", "1", "--concurrency", "3")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !res.Simulated || !res.Runtime.Simulated || !strings.Contains(errOut, "SIMULATED") {
		t.Errorf("not marked simulated: simulated %v, runtime %+v, stderr %q", res.Simulated, res.Runtime, errOut)
	}
	if res.Schema != bench.Schema || len(res.Levels) != 1 {
		t.Fatalf("schema %q, %d levels", res.Schema, len(res.Levels))
	}
	l := res.Levels[0]
	if l.Concurrency != 3 || l.Pods != 4 || l.Failed != 0 {
		t.Errorf("concurrency %d, pods %d, failed %d (%v): want 3, 4, 0", l.Concurrency, l.Pods, l.Failed, l.Errors)
	}
	var phases []string
	for _, s := range l.Phases {
		phases = append(phases, s.Name)
		checkOrdered(t, s)
	}
	if got, want := strings.Join(phases, " "), "admit dirs volumes pull-secrets sandbox pull create start teardown"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	methods := map[string]bench.Series{}
	for _, s := range l.Methods {
		methods[s.Name] = s
		checkOrdered(t, s)
	}
	for _, m := range []string{"Version", "RunPodSandbox", "CreateContainer", "StartContainer", "StopPodSandbox", "RemovePodSandbox"} {
		if methods[m].PerPod != 1 {
			t.Errorf("%s: %v calls per pod, want 1", m, methods[m].PerPod)
		}
	}
	for _, s := range []bench.Series{l.SLI, l.Total, l.Floor, l.Own, l.Wall} {
		checkOrdered(t, s)
	}
	if l.SLI.N != 4 || l.Total.P50 < l.SLI.P50 {
		t.Errorf("SLI %+v, total %+v: want 4 pods, total ≥ SLI", l.SLI, l.Total)
	}
}

// TestBenchScaleText: --scale runs each level and prints the scale
// curve, under the simulated runtime's warning.
func TestBenchScaleText(t *testing.T) {
	root, logs := dirs(t)
	code, out, errOut := run(t, "bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "-n", "2", "--warmup", "0",
		"--scale", "1,2", "--root-dir", root, "--log-dir", logs, "--no-color")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{bench.SimulatedNote, "concurrency 1: 2 pods", "concurrency 2: 2 pods", "scale curve", "pod_start_sli_duration_seconds", "of the CRI floor"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The simulated runtime's banner, once on the terminal (stdout and stderr).
	if n := strings.Count(out+errOut, bench.SimulatedNote); n != 1 {
		t.Errorf("the SIMULATED banner said %d times, want once:\n%s%s", n, errOut, out)
	}
}

// TestBenchCompare: against a baseline whose figures are a hundredth of
// a real (simulated) run's, the next run regresses: exit 1; against one
// a hundred times slower, it does not: exit 0.
func TestBenchCompare(t *testing.T) {
	code, res, errOut := benchJSON(t, "-n", "6", "--warmup", "0")
	if code != ExitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, errOut)
	}
	for _, tt := range []struct {
		name   string
		factor float64
		code   int
	}{{"faster baseline", 0.01, ExitPodFailed}, {"slower baseline", 100, ExitOK}} {
		t.Run(tt.name, func(t *testing.T) {
			base := scaleResult(*res.Result, tt.factor)
			path := filepath.Join(t.TempDir(), "base.json")
			data, _ := json.Marshal(base)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			code, got, errOut := benchJSON(t, "-n", "6", "--warmup", "0", "--compare", path)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errOut)
			}
			if got.Comparison == nil || len(got.Comparison.Rows) == 0 {
				t.Fatalf("no comparison in the JSON")
			}
			if (got.Comparison.Regressions > 0) != (tt.code == ExitPodFailed) {
				t.Errorf("%d regressions, exit %d", got.Comparison.Regressions, code)
			}
		})
	}
}

// scaleResult multiplies every sample of r by f (and re-summarises).
func scaleResult(r bench.Result, f float64) bench.Result {
	var levels []bench.Level
	for _, l := range r.Levels {
		sc := func(s bench.Series) bench.Series {
			v := make([]float64, len(s.Samples))
			for i, x := range s.Samples {
				v[i] = x * f
			}
			return bench.Summarize(s.Name, v)
		}
		var phases []bench.Series
		for _, s := range l.Phases {
			phases = append(phases, sc(s))
		}
		l.Phases, l.SLI, l.Total, l.Floor, l.Own = phases, sc(l.SLI), sc(l.Total), sc(l.Floor), sc(l.Own)
		levels = append(levels, l)
	}
	r.Levels = levels
	return r
}

// TestBenchBadInput: bad flags, a bad manifest or a bad baseline are exit
// 2 with one error line, and nothing is sent: the endpoint named does not
// exist, so contacting it would be exit 3.
func TestBenchBadInput(t *testing.T) {
	notBench := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(notBench, []byte(`{"schema":"something/else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{}, "-f/--filename is required"},
		{"bad manifest", []string{"-f", "../../testdata/bad/" + firstBad(t)}, ""},
		{"zero pods", []string{"-n", "0"}, "-n/--count 0"},
		{"bad scale", []string{"--scale", "1,x"}, `--scale "1,x": "x" is not a concurrency`},
		{"scale and concurrency", []string{"--scale", "1,2", "--concurrency", "2"}, "give one"},
		{"bad output", []string{"-o", "yaml"}, `-o/--output "yaml"`},
		{"threshold without compare", []string{"--threshold", "5"}, "--threshold goes with --compare"},
		{"missing baseline", []string{"--compare", "/nonexistent/base.json"}, "--compare: open /nonexistent/base.json"},
		{"not a bench result", []string{"--compare", notBench}, `schema "something/else"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench", "-r", "unix:///nonexistent/podstep-test.sock"}, tt.args...)
			if tt.name != "no file" && tt.name != "bad manifest" {
				args = append(args, "-f", "../../testdata/pods/hello.yaml")
			}
			code, out, errOut := run(t, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr %q: want one line with %q", errOut, tt.want)
			}
		})
	}
}

func firstBad(t *testing.T) string {
	files, _ := filepath.Glob("../../testdata/bad/*.yaml")
	if len(files) == 0 {
		t.Fatal("no bad manifests")
	}
	return filepath.Base(files[0])
}

// TestBenchRuntimeUnreachable: good input, but the endpoint named does not
// answer: exit 3, as for run, and no result.
func TestBenchRuntimeUnreachable(t *testing.T) {
	code, out, errOut := run(t, "bench", "-r", "unix:///nonexistent/podstep-test.sock", "-f", "../../testdata/pods/hello.yaml", "-n", "1")
	if code != ExitRuntime || out != "" || !strings.Contains(errOut, "runtime unreachable") {
		t.Errorf("exit %d, stdout %q, stderr %q: want 3, nothing, runtime unreachable", code, out, errOut)
	}
}

// TestSimServeStopsWithParent: `podstep sim-serve --until-stdin-closes
// DIR`, as bench starts it, serves the simulated runtime on DIR/sim.sock
// and, when its standard input closes (podstep went away, however it
// ended), stops and removes DIR.
func TestSimServeStopsWithParent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "sim-serve", "--until-stdin-closes", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	endpoint, err := sim.FirstLine(stdout, 10*time.Second)
	if err != nil {
		_ = cmd.Process.Kill() // the test fails either way
		t.Fatalf("sim-serve: %v", err)
	}
	c, err := cri.Dial(endpoint, "", cri.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Version(context.Background()); err != nil || v.RuntimeName != "podstep-sim" {
		t.Errorf("Version: %v, %v: want the simulated runtime", v, err)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sim-serve exited with %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill() // the test fails either way
		t.Fatal("sim-serve still runs 10 s after its standard input closed")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after sim-serve stopped (%v)", dir, err)
	}
}

// TestBenchImageConfig runs bench on the simulated runtime with
// --image-config auto against a registry behind basic auth, with
// imagePullPolicy Always (every pod pulls): the simulated pulls read the
// image's config as run's do, once per image for the whole bench (4 pods
// ask the registry no more than 1 does: one runtime process, its reads
// cached), and the result says the verdicts rest on it (rests_on in the
// JSON, the lines in the text).
func TestBenchImageConfig(t *testing.T) {
	const user, password = "puller", "Bench-pa55word-3"
	reg := imageconfigtest.New(t, user, password)
	dig := reg.Push(t, "team/app", "1.0", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1000", Entrypoint: []string{"/server"}}))
	source := reg.Host + "/team/app@" + dig
	pod := regcredPod(t, reg.Host, user, password, "image: "+reg.Host+"/team/app:1.0, imagePullPolicy: Always")
	benchOf := func(output string, n, warmup int) (string, int64) {
		t.Helper()
		before := reg.Requests()
		root, logs := dirs(t)
		code, out, errOut := run(t, "bench", "--sim", "-f", pod, "--grace-period", "0", "-o", output, "-n", fmt.Sprint(n), "--warmup", fmt.Sprint(warmup),
			"--image-config", "auto", "--image-config-no-cache", "--root-dir", root, "--log-dir", logs)
		if code != ExitOK {
			t.Fatalf("bench exit %d\n%s\n%s", code, out, errOut)
		}
		if strings.Contains(out+errOut, password) {
			t.Errorf("the output holds the password")
		}
		return out, reg.Requests() - before
	}
	_, one := benchOf("json", 1, 0)
	out, five := benchOf("json", 4, 1)
	if one == 0 || five != one {
		t.Errorf("registry requests: %d for 1 pod, %d for 5: want the same, more than 0 (one read per image, cached)", one, five)
	}
	var res bench.Output
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	want := "image config from " + source
	if ro := strings.Join(res.RestsOn, "\n"); !strings.Contains(ro, want) || !strings.Contains(ro, "image user: uid 1000") {
		t.Errorf("rests_on %q: want %q and the image's user", res.RestsOn, want)
	}
	text, _ := benchOf("text", 1, 0)
	if !strings.Contains(text, "the verdicts rest on:") || !strings.Contains(text, want) {
		t.Errorf("text output lacks what the verdicts rest on:\n%s", text)
	}
}
