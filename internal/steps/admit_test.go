package steps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/scenario"
)

// scenarioExpect is a internal/scenario/data/NAME.expect file: where the pod
// fails (nothing for a pod that runs), the kubelet's reason, and the pod
// afterwards.
type scenarioExpect struct {
	Stage    string `json:"stage"`
	Step     string `json:"step"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Display  string `json:"display"`
	Phase    string `json:"phase"`
	ExitCode int    `json:"exit_code"`
	// Containerd, when set, says why the scenario cannot be made real on
	// containerd (the integration suite then skips it).
	Containerd string `json:"containerd"`
	// Restarts is the RESTARTS column at the end (checked when set).
	Restarts *int32 `json:"restarts"`
	// Pending marks a scenario whose check podstep does not make yet: it is
	// skipped, with Note as the reason.
	Pending bool   `json:"pending"`
	Note    string `json:"note"`
	// PendingFields are fields (stage, step, reason, message, display,
	// phase, exit_code) where podstep does not match the kubelet yet: a
	// mismatch is logged with PendingNote instead of failing.
	PendingFields []string `json:"pending_fields"`
	PendingNote   string   `json:"pending_note"`
	// FeatureGates is --feature-gates for the run (e.g. a gate off by
	// default in v1.37 that the scenario needs).
	FeatureGates string `json:"feature_gates"`
	// Runtimes holds what differs on a real runtime ("containerd-1.6",
	// "containerd-2"): the integration suite and the scenario table of
	// docs/scenarios.md read it; the simulated runtime expects the fields above.
	Runtimes map[string]json.RawMessage `json:"runtimes"`
}

// TestScenarios runs every scenario of the catalogue of classic failures
// (internal/scenario/data) on the simulated runtime and checks where it fails,
// the kubelet's reason, the pod's STATUS and phase, and the CLI exit code.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(repoFile("internal/scenario/data/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
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
				t.Skipf("pending: %s", want.Note)
			}
			b := load(t, f)
			o := testOptions(t)
			g, err := gate.Parse(want.FeatureGates)
			if err != nil {
				t.Fatalf("%s.expect feature_gates: %v", name, err)
			}
			o.Config.Gates = g
			o.Node = manifestNode(t, b)
			e := runAll(t, b, newSim(t), o)
			defer teardown(t, e)

			var stage, step, reason, message string
			exit := 0
			if s, failed := e.Failed(); failed {
				stage, step, reason, message = string(s.Stage), s.Name, s.Result.Reason, s.Result.Message
				exit = 1
			}
			st := e.PodState()
			check := func(field string, got, wantV any) {
				if got == wantV {
					return
				}
				for _, f := range want.PendingFields {
					if f == field {
						t.Logf("pending: %s is %v, the kubelet's is %v: %s", field, got, wantV, want.PendingNote)
						return
					}
				}
				t.Errorf("%s = %v, want %v (failed at %q/%q: %s)", field, got, wantV, stage, step, message)
			}
			check("stage", stage, want.Stage)
			check("step", step, want.Step)
			check("reason", reason, want.Reason)
			if want.Message != "" {
				check("message", message, want.Message)
			}
			check("display", st.Display, want.Display)
			check("phase", string(st.Status.Phase), want.Phase)
			check("exit_code", exit, want.ExitCode)
			if want.Restarts != nil {
				check("restarts", st.Restarts, *want.Restarts)
			}
			checkLesson(t, name, st)
			if want.Stage == string(StageAdmit) {
				if n := len(e.Client().Calls()); n != 0 {
					t.Errorf("%d CRI calls for a rejected pod, want none", n)
				}
				if !strings.HasPrefix(st.Status.Message, "Pod was rejected: ") {
					t.Errorf("pod status message %q", st.Status.Message)
				}
				found := false
				for _, ev := range st.Events {
					found = found || (ev.Type == corev1.EventTypeWarning && ev.Reason == want.Reason && ev.Message == message)
				}
				if !found {
					t.Errorf("no Warning %s event: %+v", want.Reason, st.Events)
				}
			}
		})
	}
}

// checkLesson checks that the events the scenario's lesson says
// `kubectl describe pod` would show are events the run recorded (a
// message may be the beginning of the recorded one).
func checkLesson(t *testing.T, name string, st podstate.Snapshot) {
	t.Helper()
	sc, err := scenario.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range sc.Lesson.Describe.Events {
		found := false
		for _, ev := range st.Events {
			found = found || (ev.Type == want.Type && ev.Reason == want.Reason && strings.HasPrefix(ev.Message, want.Message))
		}
		if !found {
			t.Errorf("%s.lesson: no %s %s event %q in the run's: %+v", name, want.Type, want.Reason, want.Message, st.Events)
		}
	}
}

// TestAdmitDetails checks the admit step shows each check with its figures,
// in the kubelet's order.
func TestAdmitDetails(t *testing.T) {
	b := load(t, repoFile("internal/scenario/data/out-of-cpu.yaml"))
	o := testOptions(t)
	o.Node = manifestNode(t, b)
	e := New(b, nil, o)
	s, err := e.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range s.Result.Details {
		got = append(got, d.Key+": "+d.Value)
	}
	want := []string{
		"node: small (the manifest)",
		"node pressure: no MemoryPressure, DiskPressure or PIDPressure condition ✓",
		"sysctls: the pod sets none ✓",
		"pods: 1 + 0 on the node ≤ 110 allowed ✓",
		"cpu: requested 2000m + used 0m > allocatable 1000m ✗",
		"memory: requested 64Mi + used 0 ≤ allocatable 512Mi ✓",
		"node affinity: the pod has no nodeSelector and no required node affinity ✓",
		"node name: spec.nodeName unset ✓",
		"host ports: the pod asks for no host port ✓",
		"taints: no NoExecute taint on the node (the kubelet checks only NoExecute) ✓",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("details:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.State != Failed || !strings.HasPrefix(s.Result.Summary, "rejected: ") {
		t.Errorf("state %s", s.State)
	}
}

// manifestNode is the node podstep run picks for b without --node: the
// manifest's Node, else nil (this machine).
func manifestNode(t *testing.T, b *manifest.Bundle) *node.Node {
	t.Helper()
	if b.Node == nil {
		return nil
	}
	n, err := node.FromObject(b.Node, "the manifest")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
