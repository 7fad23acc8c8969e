package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/diff"
)

// TestDiffExitCodes runs `podstep diff` on the repository's recordings and
// the kubelet traces: 0 for a recording and itself, 1 for two that differ,
// 2 for bad input (with one error line naming the file), and for two pod
// specs unless --different-pods (then a warning and 1). A trace finds its
// manifest beside it (NAME.yaml) and is compared as a pod of that spec.
func TestDiffExitCodes(t *testing.T) {
	const (
		hello    = "../../testdata/recordings/hello.rec.gz"
		helloSim = "../../testdata/recordings/hello.v1.rec"
		crash    = "../../testdata/recordings/crashloop.rec.gz"
		simple   = "../../internal/diff/testdata/simple.rec.gz"
		trace    = "../../testdata/kubelet-traces/simple.calls.txt"
	)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a piece of it
		stderr string // a piece of it ("" for none)
	}{
		{"same", []string{hello, hello}, 0, "the same after normalisation", ""},
		{"same json", []string{hello, hello, "-o", "json"}, 0, `"differ": 0`, ""},
		{"differ", []string{helloSim, hello}, 1, "~ CreateContainer (hello)", ""},
		{"different pods", []string{hello, crash}, 2, "", "the pod specs differ: spec.containers[0].command[2]"},
		{"different pods allowed", []string{hello, crash, "--different-pods"}, 1, "calls, aligned", "warning: the pod specs differ"},
		{"kubelet trace", []string{simple, trace}, 1, "manifest: the same pod spec", ""},
		{"not a recording", []string{hello, "../../testdata/pods/hello.yaml"}, 2, "", "hello.yaml: not a podstep recording"},
		{"missing", []string{hello, "/nonexistent.rec"}, 2, "", "/nonexistent.rec: no such file"},
		{"bad output", []string{hello, hello, "-o", "yaml"}, 2, "", `-o/--output "yaml": expected text or json`},
		{"one argument", []string{hello}, 2, "", "accepts 2 arg(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"diff"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || (tc.stderr == "") != (errOut == "") || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout (want %q):\n%.600s\nstderr (want %q):\n%s", code, tc.code, tc.stdout, out, tc.stderr, errOut)
			}
			if tc.code == 2 && tc.stdout == "" && out != "" {
				t.Errorf("bad input printed to stdout:\n%s", out)
			}
			if strings.Contains(strings.Join(tc.args, " "), "json") {
				var v map[string]any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Errorf("-o json is not one JSON object: %v", err)
				}
			}
		})
	}
}

// TestDiffTraceTitleIsNoPath: a trace's title names no file. Its manifest
// is NAME.yaml beside NAME.calls.txt; a title reaching elsewhere ("#
// ../secret/x: CREATE phase") makes diff load nothing (issue 25).
func TestDiffTraceTitleIsNoPath(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	traces := filepath.Join(dir, "traces")
	for _, d := range []string{secret, traces} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pod, err := os.ReadFile("../../testdata/kubelet-traces/simple.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "x.yaml"), pod, 0o600); err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile("../../testdata/kubelet-traces/simple.calls.txt")
	if err != nil {
		t.Fatal(err)
	}
	title, rest, _ := strings.Cut(string(trace), "\n")
	evil := strings.Replace(title, "# simple:", "# ../secret/x:", 1) + "\n" + rest
	for _, name := range []string{"t.calls.txt", "other.txt"} {
		p := filepath.Join(traces, name)
		if err := os.WriteFile(p, []byte(evil), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := diff.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if r.FromManifest || r.Header.Manifest.Pod != nil {
			t.Errorf("%s: the trace's title made diff load %s", name, r.Header.Manifest.File)
		}
	}
	// The reference traces still find their manifest by their own name.
	r, err := diff.Load("../../testdata/kubelet-traces/simple.calls.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !r.FromManifest || filepath.Base(r.Header.Manifest.File) != "simple.yaml" {
		t.Errorf("simple.calls.txt: manifest %q, FromManifest %v", r.Header.Manifest.File, r.FromManifest)
	}
}
