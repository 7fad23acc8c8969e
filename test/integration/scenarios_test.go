//go:build integration

package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// scenarioExpect is a internal/scenario/data/NAME.expect file, as the engine's
// TestScenarios reads it (kept separate: this suite checks the files, not
// the code that reads them).
type scenarioExpect struct {
	Stage    string `json:"stage"`
	Step     string `json:"step"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Display  string `json:"display"`
	Phase    string `json:"phase"`
	ExitCode int    `json:"exit_code"`
	Restarts *int32 `json:"restarts"`
	// Containerd, when set, says why the scenario cannot be made real on
	// containerd; the scenario is then only asserted on the simulated runtime.
	Containerd string `json:"containerd"`

	Pending       bool     `json:"pending"`
	Note          string   `json:"note"`
	PendingFields []string `json:"pending_fields"`
	PendingNote   string   `json:"pending_note"`

	// FeatureGates is passed as --feature-gates.
	FeatureGates string `json:"feature_gates"`
	// Runtimes overrides the expectation on one runtime (key
	// "containerd-1.6" or "containerd-2"): where it lacks a feature, the
	// kubelet's refusal.
	Runtimes map[string]runtimeExpect `json:"runtimes"`
}

// runtimeExpect is what differs on one runtime. Verdict is what the
// scenario table (docs/scenarios.md) says in that runtime's column: pass (the default),
// refused (the kubelet's refusal where the runtime lacks the feature) or
// n.a.; Note says why.
type runtimeExpect struct {
	Verdict  string  `json:"verdict"`
	Note     string  `json:"note"`
	Stage    *string `json:"stage"`
	Step     *string `json:"step"`
	Reason   *string `json:"reason"`
	Message  *string `json:"message"`
	Display  *string `json:"display"`
	Phase    *string `json:"phase"`
	ExitCode *int    `json:"exit_code"`
	Restarts *int32  `json:"restarts"`
}

// runtimeKey is the runtimes key of the runtime under test.
func runtimeKey(rt runtimeUnderTest) string {
	switch rt.major {
	case 1:
		return "containerd-1.6"
	case 2:
		return "containerd-2"
	}
	return rt.name
}

// forRuntime applies the override for key and returns the verdict the
// scenario table (docs/scenarios.md) must show for it.
func (x *scenarioExpect) forRuntime(key string) (verdict, note string) {
	o, ok := x.Runtimes[key]
	if !ok {
		return "pass", ""
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&x.Stage, o.Stage)
	set(&x.Step, o.Step)
	set(&x.Reason, o.Reason)
	set(&x.Message, o.Message)
	set(&x.Display, o.Display)
	set(&x.Phase, o.Phase)
	if o.ExitCode != nil {
		x.ExitCode = *o.ExitCode
	}
	if o.Restarts != nil {
		x.Restarts = o.Restarts
	}
	if o.Verdict == "" {
		o.Verdict = "pass"
	}
	return o.Verdict, o.Note
}

// scenarioSummary is the part of the -o json summary line a scenario checks.
type scenarioSummary struct {
	Type     string `json:"type"`
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Failure  *struct {
		Stage, Step, Reason, Message string
	} `json:"failure"`
	Display  string `json:"display"`
	Restarts int32  `json:"restarts"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// TestScenariosOnContainerd runs the catalogue of classic failures
// (internal/scenario/data) against the real containerd, through the binary, and
// checks each ends where the .expect file says: stage, step, reason, STATUS,
// phase, restarts and exit code. The simulated runtime's fault annotations
// are ignored by containerd, so every scenario's manifest also makes the
// fault real (a command that exits 1, a hook that fails, an absent image).
func TestScenariosOnContainerd(t *testing.T) {
	e := setup(t)
	files, err := filepath.Glob(filepath.Join(e.repo, "internal", "scenario", "data", "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("want at least 10 scenarios, found %d (%v)", len(files), err)
	}
	sort.Strings(files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".expect")
			if err != nil {
				t.Fatal(err)
			}
			var want scenarioExpect
			if err := yaml.UnmarshalStrict(data, &want); err != nil {
				t.Fatalf("%s.expect: %v", name, err)
			}
			if want.Pending {
				t.Skipf("pending on every runtime: %s", want.Note)
			}
			if want.Containerd != "" {
				t.Skipf("scenario %s on %s: n.a.: simulated runtime only: %s", name, e.rt, want.Containerd)
			}
			verdict, note := want.forRuntime(runtimeKey(e.rt))
			if verdict == "n.a." {
				t.Skipf("scenario %s on %s: n.a.: %s", name, e.rt, note)
			}
			d := newDirs(t)
			args := []string{"run", "--auto", "-o", "json", "-f", f, "-r", e.endpoint, "--grace-period", "0",
				"--max-restarts", "2", "--backoff-scale", "0.001", "--root-dir", d.root, "--log-dir", d.logs}
			if want.FeatureGates != "" {
				args = append(args, "--feature-gates", want.FeatureGates)
			}
			if want.Stage == "containers" && want.ExitCode != 0 {
				// A container that exits: the relist ends at its exit; the
				// default 1 s (one PLEG period) was too short on a loaded
				// machine (restart-rule-exit-code's `exit 42` still running
				// after 1 s, containerd 2, load 7).
				args = append(args, "--settle", "10s")
			}
			r := e.podstep(t, args...)
			defer func() {
				if !t.Failed() {
					t.Logf("scenario %s on %s: %s %s", name, e.rt, verdict, note)
				}
			}()
			sum := lastSummary(t, r.stdout)
			var stage, step, reason, message string
			if sum.Failure != nil {
				stage, step, reason, message = sum.Failure.Stage, sum.Failure.Step, sum.Failure.Reason, sum.Failure.Message
			}
			check := func(field string, got, w any) {
				if got == w {
					return
				}
				for _, p := range want.PendingFields {
					if p == field {
						t.Logf("pending: %s is %v, the kubelet's is %v: %s", field, got, w, want.PendingNote)
						return
					}
				}
				t.Errorf("%s = %v, want %v (failure %q/%q: %s)\n%s", field, got, w, stage, step, message, r)
			}
			check("exit_code", r.code, want.ExitCode)
			check("stage", stage, want.Stage)
			check("step", step, want.Step)
			check("reason", reason, want.Reason)
			if want.Message != "" {
				check("message", message, want.Message)
			}
			check("display", sum.Display, want.Display)
			check("phase", sum.Status.Phase, want.Phase)
			if want.Restarts != nil {
				check("restarts", sum.Restarts, *want.Restarts)
			}
			if strings.Contains(r.stdout, "SIMULATED") {
				t.Errorf("ran on the simulated runtime")
			}
			if sb := dialCRI(t, e.endpoint).managedSandboxes(t); len(sb) != 0 {
				t.Errorf("%d podstep sandbox(es) left after the run", len(sb))
			}
			assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
		})
	}
}

// lastSummary finds the summary object in -o json output.
func lastSummary(t *testing.T, stdout string) scenarioSummary {
	t.Helper()
	var sum scenarioSummary
	found := false
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"type":"summary"`) {
			continue
		}
		if err := json.Unmarshal(line, &sum); err != nil {
			t.Fatalf("summary line: %v", err)
		}
		found = true
	}
	if !found {
		t.Fatalf("no summary line in the output:\n%s", stdout)
	}
	return sum
}
