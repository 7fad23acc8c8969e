package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/steps/stepstest"
)

// countBytes counts what is written to it.
type countBytes int64

func (c *countBytes) Write(p []byte) (int, error) { *c += countBytes(len(p)); return len(p), nil }

// jsonRunSize runs `podstep run --sim --auto -o json --record FILE` on
// file (extra: more flags) in a process of its own and returns the bytes
// of its -o json output and of its recording (uncompressed).
func jsonRunSize(tb testing.TB, file string, extra ...string) (jsonBytes, recBytes int64) {
	tb.Helper()
	d := tb.TempDir()
	rec := filepath.Join(d, "run.rec")
	var out countBytes
	var stderr strings.Builder
	cmd := exec.Command(bin, append([]string{"run", "--sim", "--auto", "-o", "json", "-f", file, "--record", rec,
		"--root-dir", d + "/root", "--log-dir", d + "/logs"}, extra...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%v: %s", err, stderr.String())
	}
	st, err := os.Stat(rec)
	if err != nil {
		tb.Fatal(err)
	}
	return int64(out), st.Size()
}

// TestJSONLinearInPod: the -o json output and the recording of a run grow
// linearly with the pod's containers: per container, a 1,000-container
// pod's are within 1.5 times a 100-container pod's. Each step line had
// the whole pod (every container's status) until recording format 2
// (issue 34): 10 times the containers made 100 times the bytes (845 MB
// of -o json for 1,000 containers; per container 9.5 times 100's).
func TestJSONLinearInPod(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-container pod: not in -short")
	}
	dir := t.TempDir()
	type size struct{ json, rec float64 }
	per := map[int]size{}
	for _, n := range []int{100, 1000} {
		j, r := jsonRunSize(t, stepstest.WideManifest(t, dir, n))
		per[n] = size{float64(j) / float64(n), float64(r) / float64(n)}
		t.Logf("%d containers: -o json %d bytes (%.0f per container), recording %d bytes (%.0f per container)", n, j, per[n].json, r, per[n].rec)
	}
	if g := per[1000].json / per[100].json; g > 1.5 {
		t.Errorf("-o json: %.0f bytes per container for 1,000 containers, %.1f times 100's (%.0f): want ≤ 1.5 (linear)", per[1000].json, g, per[100].json)
	}
	if g := per[1000].rec / per[100].rec; g > 1.5 {
		t.Errorf("recording: %.0f bytes per container for 1,000 containers, %.1f times 100's (%.0f): want ≤ 1.5 (linear)", per[1000].rec, g, per[100].rec)
	}
}

// BenchmarkJSONPodSize runs `podstep run --sim --auto -o json --record
// FILE` on pods of 10, 100 and 1,000 containers and reports the bytes of
// the -o json output and of the recording (uncompressed), in all and per
// container: both must grow linearly with the containers (issue 34).
//
//	go test -run '^$' -bench JSONPodSize -benchtime 3x ./cmd/podstep
func BenchmarkJSONPodSize(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			file := stepstest.WideManifest(b, b.TempDir(), n)
			var j, r int64
			for b.Loop() {
				j, r = jsonRunSize(b, file)
			}
			b.ReportMetric(float64(j), "json-B")
			b.ReportMetric(float64(r), "rec-B")
			b.ReportMetric(float64(j)/float64(n), "json-B/container")
			b.ReportMetric(float64(r)/float64(n), "rec-B/container")
		})
	}
}

// TestJSONFullPod: with --json-full-pod every step line of -o json has the
// whole pod and none a pod_delta, as before recording format 2; replay
// --json-full-pod of the run's (format 2) recording prints the same pods;
// without -o json the flag is a usage error.
func TestJSONFullPod(t *testing.T) {
	root, logs := dirs(t)
	rec := filepath.Join(t.TempDir(), "run.rec.gz")
	code, out, errOut := run(t, "run", "--auto", "--sim", "--grace-period", "0", "-o", "json", "--json-full-pod",
		"-f", "../../testdata/pods/init.yaml", "--root-dir", root, "--log-dir", logs, "--record", rec)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	pods := func(out string) []string {
		var ps []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var s map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatal(err)
			}
			if string(s["type"]) != `"step"` {
				continue
			}
			if s["pod"] == nil || s["pod_delta"] != nil {
				t.Errorf("step line without the whole pod, or with a pod_delta: %.200s…", l)
			}
			ps = append(ps, string(s["pod"]))
		}
		return ps
	}
	want := pods(out)
	if !strings.Contains(readRecording(t, rec), `"pod_delta":`) {
		t.Errorf("the recording has no pod_delta: --json-full-pod is -o json's, not the recording's")
	}
	code, rout, rerr := run(t, "replay", rec, "--auto", "-o", "json", "--json-full-pod")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, rerr)
	}
	if got := pods(rout); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("replay --json-full-pod printed other pods than run --json-full-pod (%d, %d steps)", len(got), len(want))
	}
	for _, args := range [][]string{
		{"run", "--auto", "--sim", "--json-full-pod", "-f", "../../testdata/pods/hello.yaml"},
		{"replay", rec, "--auto", "--json-full-pod"},
	} {
		code, _, errOut := run(t, args...)
		if code != 2 || !strings.Contains(errOut, "--json-full-pod is a shape of -o json's step lines: it goes with -o json") {
			t.Errorf("%s: exit %d, stderr %q: want 2 and the usage error", args[0], code, errOut)
		}
	}
}

var _ io.Writer = (*countBytes)(nil)
