package live

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// TestPageFoldsPodDelta: the page's podstepFoldPod (live.js, run by
// node) folds the step lines of real runs (a whole pod, then pod_deltas,
// a whole pod again now and then) into the pod --json-full-pod prints
// after each step, as report.PodFolder does: the page draws the pod it
// drew when every line had it whole.
func TestPageFoldsPodDelta(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed (hack/test.sh installs nodejs): CI=true runs the page's fold")
		}
		t.Skip("node is not installed: the page's fold is not run (hack/test.sh installs nodejs; CI=true fails here)")
	}
	js, err := files.ReadFile("live.js")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(js), "// fold:begin\n")
	fold, _, ok2 := strings.Cut(rest, "// fold:end\n")
	if !ok1 || !ok2 {
		t.Fatal("live.js has no // fold:begin … // fold:end section")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "fold.js")
	if err := os.WriteFile(script, []byte(`"use strict";
`+fold+`
const lines = require("fs").readFileSync(process.argv[2], "utf8").trim().split("\n");
let pod = null;
const out = [];
for (const l of lines) {
  const s = JSON.parse(l);
  if (s.pod) pod = s.pod;
  else if (s.pod_delta) pod = pod && podstepFoldPod(pod, s.pod_delta);
  out.push(JSON.stringify(pod));
}
process.stdout.write(out.join("\n") + "\n");
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"../../internal/scenario/data/crashloop.yaml", "../../testdata/pods/init.yaml", stepstest.WideManifest(t, dir, 30)} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var lines, full bytes.Buffer
			delta, whole := report.New(&lines, report.JSON), report.New(&full, report.JSON)
			whole.SetFullPod(true)
			eng := stepstest.New(t, file, nil).Engine
			eng.Subscribe(func(ev steps.Event) { delta.Observe(ev); whole.Observe(ev) })
			stepstest.Through(t, eng)
			in := filepath.Join(dir, filepath.Base(file)+".jsonl")
			if err := os.WriteFile(in, lines.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(node, script, in).Output()
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			want := strings.Split(strings.TrimSuffix(full.String(), "\n"), "\n")
			if len(got) != len(want) || !bytes.Contains(lines.Bytes(), []byte(`"pod_delta":`)) {
				t.Fatalf("%d pods folded, %d steps (pod_delta lines: %v)", len(got), len(want), bytes.Contains(lines.Bytes(), []byte(`"pod_delta":`)))
			}
			for i := range want {
				var w struct{ Pod any }
				var g any
				if err := json.Unmarshal([]byte(want[i]), &w); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(got[i]), &g); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g, w.Pod) {
					t.Fatalf("step line %d: the page folded\n%s\nwant\n%s", i+1, got[i], want[i])
				}
			}
		})
	}
}

// TestPagePLEGBanner: the page's podstepPLEG (live.js, run by node) makes
// the node's banner from proxy's "pleg" lines (watch.PLEGNote's JSON): a
// late relist with the call in flight, its ages ticking; unhealthy (and a
// late one that ticked past the threshold) severe; "relisted" none.
func TestPagePLEGBanner(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed (hack/test.sh installs nodejs): CI=true runs the page's PLEG banner")
		}
		t.Skip("node is not installed: the page's PLEG banner is not run (hack/test.sh installs nodejs; CI=true fails here)")
	}
	js, err := files.ReadFile("live.js")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(js), "// pleg:begin\n")
	fn, _, ok2 := strings.Cut(rest, "// pleg:end\n")
	if !ok1 || !ok2 {
		t.Fatal("live.js has no // pleg:begin … // pleg:end section")
	}
	for _, tc := range []struct {
		name, line string
		since      int
		want       string // "null", or severe + " " + text
	}{
		{"late", `{"type":"pleg","event":"late","age_ms":31000,"threshold_ms":180000,"open":{"seq":7,"method":"ListContainers","age_ms":30000}}`, 0,
			"false PLEG: the kubelet's last relist was 31s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady); waiting on ListContainers #7 30s, no answer"},
		{"late, ticking", `{"type":"pleg","event":"late","age_ms":5000,"threshold_ms":180000}`, 2500,
			"false PLEG: the kubelet's last relist was 7.5s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady)"},
		{"unhealthy", `{"type":"pleg","event":"unhealthy","age_ms":181000,"threshold_ms":180000}`, 0,
			"true PLEG: the kubelet's last relist was 3m1s ago: PLEG is not healthy (over 3m0s): the node is NotReady and the kubelet syncs no pod until a relist goes through"},
		{"late past the threshold", `{"type":"pleg","event":"late","age_ms":120000,"threshold_ms":180000}`, 61000,
			"true PLEG: the kubelet's last relist was 3m1s ago: PLEG is not healthy (over 3m0s): the node is NotReady and the kubelet syncs no pod until a relist goes through"},
		{"relisted", `{"type":"pleg","event":"relisted","age_ms":40000,"threshold_ms":180000}`, 0, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `"use strict";
` + fn + `
const v = podstepPLEG(JSON.parse(process.argv[1]), Number(process.argv[2]));
process.stdout.write(v === null ? "null" : v.severe + " " + v.text);
`
			out, err := exec.Command(node, "-e", script, tc.line, strconv.Itoa(tc.since)).Output()
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			if string(out) != tc.want {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
}
