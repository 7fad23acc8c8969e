package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// TestStepPodsWhole: a version 2 recording writes most steps' pod as a
// pod_delta, and the Reader gives every step line the whole pod after it:
// byte for byte the pod --json-full-pod prints of the same run. So replay,
// its page, diff and the TUI read what they read in version 1.
func TestStepPodsWhole(t *testing.T) {
	for _, file := range []string{"testdata/pods/init.yaml", "internal/scenario/data/crashloop.yaml"} {
		t.Run(file, func(t *testing.T) {
			var buf, full bytes.Buffer
			r := New(&buf, true)
			fp := report.New(&full, report.JSON)
			fp.SetFullPod(true)
			recordWith(t, repoFile(file), r, func(ev steps.Event) { r.Observe(ev); fp.Observe(ev) })
			_, evs, err := readAll(t, buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(full.String(), "\n"), "\n")
			deltas, n := 0, 0
			for _, ev := range evs {
				if ev.Step == nil {
					continue
				}
				if bytes.Contains(ev.Raw, []byte(`"pod_delta":`)) {
					deltas++
				}
				var w report.StepJSON
				if err := json.Unmarshal([]byte(want[n]), &w); err != nil {
					t.Fatal(err)
				}
				n++
				got, _ := json.Marshal(ev.Step.Pod)
				exp, _ := json.Marshal(w.Pod)
				if ev.Step.Pod == nil || !bytes.Equal(got, exp) {
					t.Fatalf("line %d (step %d): pod\n%s\nwant\n%s", ev.Line, ev.Step.ID, got, exp)
				}
			}
			if n != len(want) || deltas == 0 {
				t.Errorf("%d step lines (%d with pod_delta), want %d", n, deltas, len(want))
			}
		})
	}
}

// TestPodDeltaDamage: a step line whose pod_delta does not fit the pod
// before (no whole pod before it, a container the pod lacks) is damage at
// that line: the recording reads up to it.
func TestPodDeltaDamage(t *testing.T) {
	rec, _, _ := recordRun(t, repoFile("testdata/pods/hello.yaml"), false)
	lines := strings.Split(string(rec), "\n")
	first, second := -1, -1
	for i, l := range lines {
		if strings.HasPrefix(l, `{"type":"step",`) {
			if first < 0 {
				first = i
			} else if second < 0 && strings.Contains(l, `"pod_delta":`) {
				second = i
			}
		}
	}
	if first < 0 || second < 0 || !strings.Contains(lines[first], `"pod":`) {
		t.Fatalf("no step line with the whole pod then one with a pod_delta (%d, %d)", first, second)
	}
	for _, tc := range []struct {
		name string
		edit func([]string) int // returns the index of the damaged line
		why  string
	}{
		{"delta first", func(ls []string) int { ls[first] = ""; return second }, "a \"step\" line's pod_delta comes before any step line with the whole pod"},
		{"unknown container", func(ls []string) int {
			ls[second] = strings.Replace(ls[second], `"pod_delta":{`, `"pod_delta":{"containers":[{"kind":"regular","name":"ghost"}],`, 1)
			return second
		}, `regular container "ghost" is not in the pod's list of regular container statuses`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := append([]string(nil), lines...)
			at := tc.edit(ls)
			var kept []string
			line := 0
			for i, l := range ls {
				if l == "" && i < len(ls)-1 {
					continue
				}
				if i == at {
					line = len(kept) + 1
				}
				kept = append(kept, l)
			}
			_, _, err := readAll(t, []byte(strings.Join(kept, "\n")))
			var de *DamageError
			if !errors.As(err, &de) || de.Line != line || !strings.Contains(de.Why, tc.why) {
				t.Errorf("error %v, want damage at line %d saying %q", err, line, tc.why)
			}
		})
	}
}

// TestVersion1Pods: a version 1 recording (the whole pod on every step
// line) reads as before: every step line has its own pod.
func TestVersion1Pods(t *testing.T) {
	data, err := os.ReadFile(repoFile("testdata/recordings/hello.v1.rec"))
	if err != nil {
		t.Fatal(err)
	}
	h, evs, err := readAll(t, data)
	if err != nil || h.Version != 1 {
		t.Fatalf("version %d, %v", h.Version, err)
	}
	for _, ev := range evs {
		if ev.Step == nil {
			continue
		}
		var raw struct {
			Pod *report.PodJSON `json:"pod"`
		}
		if err := json.Unmarshal(ev.Raw, &raw); err != nil || raw.Pod == nil {
			t.Fatalf("line %d: %v (pod %v)", ev.Line, err, raw.Pod)
		}
		got, _ := json.Marshal(ev.Step.Pod)
		want, _ := json.Marshal(raw.Pod)
		if !bytes.Equal(got, want) {
			t.Errorf("line %d: the pod read is not the line's", ev.Line)
		}
	}
}

// TestLogLinesWidePod: in a pod of more than logScanAll containers, whose
// logs are read all together only now and then, every container's line is
// recorded once, after the step that started it or later.
func TestLogLinesWidePod(t *testing.T) {
	const n = logScanAll + 6
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: wide-logs\n  namespace: default\nspec:\n  containers:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    image: docker.io/library/busybox:1.35\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", \"echo hello c%d; sleep 3600\"]\n", i, i)
	}
	file := filepath.Join(t.TempDir(), "wide-logs.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _, _ := recordRun(t, file, false)
	_, evs, err := readAll(t, rec)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]int{}
	seen := map[string]int{}
	for _, ev := range evs {
		switch {
		case ev.Step != nil && strings.HasPrefix(ev.Step.Name, "start/"):
			started[ev.Step.Container] = ev.Step.ID
		case ev.Log != nil:
			c := ev.Log.Container
			seen[c]++
			if ev.Log.Line != "hello "+c || ev.Log.Step < started[c] || started[c] == 0 {
				t.Errorf("log line %+v (the container started at step %d)", *ev.Log, started[c])
			}
		}
	}
	for i := range n {
		if c := fmt.Sprintf("c%d", i); seen[c] != 1 {
			t.Errorf("container %s: %d log lines, want 1", c, seen[c])
		}
	}
}
