package live

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
