package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// runSteps runs the manifest file on the simulated runtime, creation and
// teardown, and returns its finished steps as the JSON printer gets them.
func runSteps(t *testing.T, file string) []StepJSON {
	t.Helper()
	eng := stepstest.New(t, file, nil).Engine
	var b StepBuilder
	var out []StepJSON
	eng.Subscribe(func(ev steps.Event) {
		if ev.Kind == steps.StepDone {
			out = append(out, b.Step(ev))
		}
	})
	stepstest.Through(t, eng)
	return out
}

// printSteps prints steps through a JSON printer (full: --json-full-pod)
// and returns its lines.
func printSteps(t *testing.T, ss []StepJSON, full bool) []string {
	t.Helper()
	var buf bytes.Buffer
	p := New(&buf, JSON)
	p.SetFullPod(full)
	for _, s := range ss {
		p.Step(s)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// TestPodDeltaFolds: for real runs on the simulated runtime (restarts,
// init containers, hooks, a wide pod), the step lines -o json prints (a
// whole pod first, then pod_delta, a whole pod again now and then) fold
// (PodFolder) into the very pod of each step: its JSON byte for byte what
// --json-full-pod prints. Printing the folded steps again gives the same
// lines: a replay of a recording prints what the run printed.
func TestPodDeltaFolds(t *testing.T) {
	wide := stepstest.WideManifest(t, t.TempDir(), 40)
	for _, file := range []string{
		"../../testdata/pods/hello.yaml",
		"../../testdata/pods/init.yaml",
		"../../testdata/pods/hooks.yaml",
		"../../internal/scenario/data/crashloop.yaml",
		"../../internal/scenario/data/init-fails-never.yaml",
		wide,
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ss := runSteps(t, file)
			lines, full := printSteps(t, ss, false), printSteps(t, ss, true)
			if len(lines) != len(ss) || len(full) != len(ss) {
				t.Fatalf("%d and %d lines for %d steps", len(lines), len(full), len(ss))
			}
			var f PodFolder
			var folded []StepJSON
			var base *PodJSON
			var since []*PodDelta
			deltas, wholes := 0, 0
			for i, line := range lines {
				var s, want StepJSON
				if err := json.Unmarshal([]byte(line), &s); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(full[i]), &want); err != nil {
					t.Fatal(err)
				}
				if want.Pod == nil || want.PodDelta != nil {
					t.Fatalf("step %d: --json-full-pod printed pod %v, pod_delta %v", s.ID, want.Pod != nil, want.PodDelta != nil)
				}
				if (s.Pod == nil) == (s.PodDelta == nil) {
					t.Fatalf("step %d: pod %v and pod_delta %v: want exactly one", s.ID, s.Pod != nil, s.PodDelta != nil)
				}
				if s.PodDelta != nil {
					deltas++
				} else {
					wholes++
				}
				if s.Pod != nil {
					base, since = s.Pod, nil
				} else {
					since = append(since, s.PodDelta)
				}
				if err := f.Fold(&s); err != nil {
					t.Fatalf("step %d: %v", s.ID, err)
				}
				got, _ := json.Marshal(s.Pod)
				exp, _ := json.Marshal(want.Pod)
				if !bytes.Equal(got, exp) {
					t.Fatalf("step %d (%s): folded pod\n%s\nwant\n%s", s.ID, s.Name, got, exp)
				}
				// The deltas since the last whole pod, at once.
				all, err := ApplyAll(base, since)
				if err != nil {
					t.Fatalf("step %d: ApplyAll: %v", s.ID, err)
				}
				if got, _ := json.Marshal(all); !bytes.Equal(got, exp) {
					t.Fatalf("step %d (%s): ApplyAll of %d deltas\n%s\nwant\n%s", s.ID, s.Name, len(since), got, exp)
				}
				folded = append(folded, s)
			}
			if deltas == 0 || lines[0] != full[0] {
				t.Errorf("%d pod_delta lines, %d whole pods; first line\n%s\nwant\n%s", deltas, wholes, lines[0], full[0])
			}
			if again := printSteps(t, folded, false); !reflect.DeepEqual(again, lines) {
				t.Errorf("the folded steps print other lines than the run's")
			}
			t.Logf("%d steps: %d pod_delta, %d whole pods", len(ss), deltas, wholes)
		})
	}
}

// TestPodDeltaApply: deltas built by hand, and ones that do not fit the
// pod before (a recording edited or damaged) are errors, not a wrong pod.
func TestPodDeltaApply(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	long := "containers with unready status: [" + strings.Repeat("c ", 40) + "ü app]"
	prev := &PodJSON{Phase: "Pending", Display: "ContainerCreating", Ready: "0/2", Status: corev1.PodStatus{
		Phase: "Pending",
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: "True"},
			{Type: corev1.ContainersReady, Status: "False", Message: long},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app"}, {Name: "db"}},
	}}
	cur := &PodJSON{Phase: "Running", Display: "Running", Ready: "1/2", Status: corev1.PodStatus{
		Phase: "Running", PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: "True"},
			{Type: corev1.ContainersReady, Status: "False", Message: strings.Replace(long, " ü app", " ü", 1)},
			{Type: corev1.PodReady, Status: "False"},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running, Ready: true}, {Name: "db"}, {Name: "extra"}},
	}}
	d := DiffPod(prev, cur)
	if len(d.Containers) != 2 || d.Containers[0].Name != "app" || d.Containers[1].Name != "extra" || d.Containers[0].Kind != KindRegular {
		t.Errorf("containers %+v, want app and extra (regular)", d.Containers)
	}
	if len(d.Conditions) != 2 || d.Conditions[0].MessageEdit == nil || d.Conditions[0].Message != "" || d.ConditionTypes == nil {
		t.Errorf("conditions %+v (types %v), want ContainersReady as an edit and Ready, and the types", d.Conditions, d.ConditionTypes)
	}
	if d.Status == nil || d.ContainerLists == nil {
		t.Errorf("status %v, lists %v: want both", d.Status, d.ContainerLists)
	}
	b, _ := json.Marshal(d)
	var back PodDelta
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.Apply(prev)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got), mustJSON(t, cur); g != w {
		t.Errorf("applied\n%s\nwant\n%s", g, w)
	}
	before := mustJSON(t, prev)
	if all, err := ApplyAll(prev, []*PodDelta{&back, DiffPod(cur, cur)}); err != nil || mustJSON(t, all) != mustJSON(t, cur) || mustJSON(t, prev) != before {
		t.Errorf("ApplyAll: %v\n%s\nwant\n%s (the pod before unchanged)", err, mustJSON(t, all), mustJSON(t, cur))
	}
	if same := DiffPod(cur, cur); same.Status != nil || same.Conditions != nil || same.Containers != nil || same.ContainerLists != nil || same.ConditionTypes != nil {
		t.Errorf("no change gave %s", mustJSON(t, same))
	}
	for _, tc := range []struct {
		name, delta, want string
	}{
		{"unknown container", `{"containers":[{"kind":"regular","name":"nope"}]}`, `regular container "nope" is not in the pod's list`},
		{"unknown kind", `{"containers":[{"kind":"sidecar","name":"app"}]}`, `kind "sidecar" (expected init, regular or ephemeral)`},
		{"list names a missing one", `{"container_lists":{"regular":["app","ghost"]}}`, `regular container "ghost" is neither in the delta nor in the pod before`},
		{"edit out of range", `{"conditions":[{"type":"ContainersReady","status":"False","message_edit":{"at":500,"cut":1,"put":""}}]}`, `message_edit (at 500, cut 1) does not fit`},
		{"condition not listed", `{"conditions":[{"type":"Other","status":"True"}]}`, `condition "Other" is not in the pod's list`},
	} {
		var d PodDelta
		if err := json.Unmarshal([]byte(tc.delta), &d); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Apply(prev); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if _, err := ApplyAll(prev, []*PodDelta{nil, &d}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ApplyAll's error %v, want %q", tc.name, err, tc.want)
		}
	}
	var f PodFolder
	if err := f.Fold(&StepJSON{PodDelta: &PodDelta{}}); err == nil {
		t.Errorf("a pod_delta first folded without error")
	}
}

// TestContainerStatusFields: sameStatus compares every field of
// ContainerStatus; a field k8s.io/api adds must be added there.
func TestContainerStatusFields(t *testing.T) {
	if n := reflect.TypeFor[corev1.ContainerStatus]().NumField(); n != 15 {
		t.Errorf("corev1.ContainerStatus has %d fields, sameStatus compares 15: compare the new ones too", n)
	}
}

// TestPodLinesResync: the printer writes the whole pod again once the
// deltas since the last whole pod outweigh it resyncEvery times, so the
// whole pods stay a bounded share of the output.
func TestPodLinesResync(t *testing.T) {
	ss := runSteps(t, "../../internal/scenario/data/crashloop.yaml")
	var pod, delta int
	sc := bufio.NewScanner(strings.NewReader(strings.Join(printSteps(t, ss, false), "\n")))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		pod += len(raw["pod"])
		delta += len(raw["pod_delta"])
	}
	first, _ := json.Marshal(ss[0].Pod)
	if pod > len(first)+delta/resyncEvery+len(first) {
		t.Errorf("whole pods %d bytes, deltas %d: want at most the first two and a %d-th of the deltas", pod, delta, resyncEvery)
	}
	t.Logf("whole pods %d bytes, deltas %d bytes", pod, delta)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
