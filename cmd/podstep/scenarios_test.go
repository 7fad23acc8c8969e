package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestScenariosCommand: the list, show (text and JSON), a wrong name (exit
// 2 with names close to it) and the shell's completion of names.
func TestScenariosCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout
		err  string   // substring of stderr
	}{
		{"list", []string{"scenarios"}, 0, []string{"crashloop", "31 scenarios"}, ""},
		{"list --wide", []string{"scenarios", "--wide"}, 0, []string{"OUTCOME", "CrashLoopBackOff at containers/backoff/app"}, ""},
		{"show -o yaml", []string{"scenarios", "show", "crashloop", "-o", "yaml"}, 0, []string{"apiVersion: v1\n", "kind: Pod"}, ""},
		{"show", []string{"scenarios", "show", "out-of-cpu"}, 0, []string{"generalFilter (pkg/kubelet/lifecycle/predicate.go)", "Warning  OutOfcpu", "Fix:", "kind: Pod", "podstep run --scenario out-of-cpu"}, ""},
		{"unknown", []string{"scenarios", "show", "crash"}, ExitUsage, nil, `no scenario "crash" (did you mean crashloop, init-crashloop?)`},
		{"bad output", []string{"scenarios", "-o", "yaml"}, ExitUsage, nil, "yaml"},
		{"two args", []string{"scenarios", "show", "a", "b"}, ExitUsage, nil, "accepts 1 arg"},
		{"complete show", []string{"__complete", "scenarios", "show", "init-"}, 0, []string{"init-crashloop\ninit-fails-never\n:4"}, ""},
		{"complete --scenario", []string{"__complete", "run", "--scenario", "out"}, 0, []string{"out-of-cpu\n:4"}, ""},
		{"-f and --scenario", []string{"run", "--auto", "--scenario", "crashloop", "-f", "x.yaml", "-r", "unix:///nonexistent.sock"}, ExitUsage, nil, "--scenario and -f/--filename both given"},
		{"run unknown", []string{"run", "--auto", "--scenario", "nope", "-r", "unix:///nonexistent.sock"}, ExitUsage, nil, `--scenario: no scenario "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			for _, s := range tc.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tc.err) {
				t.Errorf("stderr %q lacks %q", errOut, tc.err)
			}
		})
	}
	code, out, _ := run(t, "scenarios", "show", "crashloop", "-o", "json")
	var s struct {
		Name, Manifest string
		Lesson         struct{ Kubelet struct{ Function string } }
	}
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || s.Lesson.Kubelet.Function != "kubeGenericRuntimeManager.doBackOff" || !strings.Contains(s.Manifest, "exit 2") {
		t.Fatalf("show -o json: exit %d, %v: %+v", code, err, s)
	}
}

// TestScenarioEmbedded runs the built binary away from the repository
// (what a `go install`ed podstep is): the scenarios come from the binary.
func TestScenarioEmbedded(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--sim", "--auto", "-o", "json", "--scenario", "out-of-cpu", "--root-dir", dir+"/root", "--log-dir", dir+"/logs")
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitPodFailed {
		t.Fatalf("run --scenario out-of-cpu: %v, want exit %d; %s", err, ExitPodFailed, out)
	}
	if !strings.Contains(string(out), `"reason":"OutOfcpu"`) {
		t.Errorf("no OutOfcpu in the run's JSON:\n%s", out)
	}
	// The scenario's feature gates apply: stop-signal needs ContainerStopSignals.
	cmd = exec.Command(bin, "plan", "-o", "json", "--scenario", "stop-signal", "--root-dir", dir+"/root", "--log-dir", dir+"/logs")
	cmd.Dir = dir
	if out, err = cmd.Output(); err != nil || !strings.Contains(string(out), "SIGUSR1") {
		t.Fatalf("plan --scenario stop-signal: %v, no SIGUSR1 in:\n%.2000s", err, out)
	}
}

// TestPredict: run --predict and replay --predict read scripted answers
// from stdin and say right or wrong, with the scenario's lesson and a score.
func TestPredict(t *testing.T) {
	root, logs := dirs(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"run", []string{"run", "--sim", "--predict", "--scenario", "out-of-cpu", "--root-dir", root, "--log-dir", logs}, []string{"? step 1 admit (admit): how does it end?", "your answer (a-d, q stops asking): ", "lesson (out-of-cpu): ", "predict: "}},
		{"replay", []string{"replay", "--predict", "../../testdata/recordings/out-of-cpu.rec.gz"}, []string{"? step 1 admit (admit): how does it end?", "lesson (out-of-cpu): ", "predict: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Execute(tc.args, strings.NewReader("a\n"), &out, &errb)
			if code != ExitPodFailed && code != 0 {
				t.Fatalf("exit %d; stderr: %s", code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("lacks %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(out.String(), "✓ right: the step failed: OutOfcpu") && !strings.Contains(out.String(), "✗ wrong: the step failed: OutOfcpu") {
				t.Errorf("no verdict:\n%s", out.String())
			}
		})
	}
	if code, _, errOut := run(t, "run", "--predict", "-o", "json", "--scenario", "crashloop", "-r", "unix:///nonexistent.sock"); code != ExitUsage || !strings.Contains(errOut, "--predict") {
		t.Errorf("--predict -o json: exit %d, %s", code, errOut)
	}
}
