//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// diffJSON is what the test reads of `podstep diff -o json`.
type diffJSON struct {
	A, B struct {
		Substs []struct{ Placeholder, Value string }
	}
	Calls []struct {
		Op, Method, Container string
		CountA                int `json:"count_a"`
		CountB                int `json:"count_b"`
		Fields                []struct{ Path, A, B string }
	}
	Stages []struct {
		Stage    string
		InA, InB bool `json:"-"`
	}
	Counts struct {
		Same, Differ int
		OnlyA        int `json:"only_a"`
		OnlyB        int `json:"only_b"`
	}
}

func parseDiff(t *testing.T, r *result) diffJSON {
	t.Helper()
	var d diffJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("podstep diff -o json: %v\n%s", err, r)
	}
	return d
}

// recordPod runs the pod file on the harness containerd with --record into
// a fresh file, requires it to run and leave nothing, and returns the file.
func (e *env) recordPod(t *testing.T, file, name string) string {
	t.Helper()
	d := newDirs(t)
	rec := filepath.Join(t.TempDir(), name+".rec.gz")
	r := e.mustRun(t, d, file, "--record", rec)
	e.assertNothingLeft(t, d, "default", r.summary.Pod[strings.IndexByte(r.summary.Pod, '/')+1:], r.summary.UID)
	return rec
}

// TestDiffOnContainerd records pods on the harness containerd and compares
// the recordings with `podstep diff`, as a user would:
//   - the hello pod twice (other root and log directories, other sandbox and
//     container IDs, other times, a relist polling a different number of
//     times): the same after normalisation, exit 0, and the normalisations
//     name each run's own values;
//   - hello and a variant (another name, command and env var): refused as
//     different manifests (exit 2) unless --different-pods, then exit 1 with
//     exactly the expected request fields differing and the call order the
//     same;
//   - not a recording, and a cut one: exit 2, one error line naming the file.
func TestDiffOnContainerd(t *testing.T) {
	e := setup(t)
	a := e.recordPod(t, e.pod("hello"), "a")
	b := e.recordPod(t, e.pod("hello"), "b")

	r := e.podstep(t, "diff", a, b)
	if r.code != 0 || !strings.Contains(r.stdout, "0 differ, 0 only in A, 0 only in B: the same after normalisation") ||
		!strings.Contains(r.stdout, "manifest: the same pod spec") {
		t.Fatalf("diff of two runs of the same pod: want exit 0 and the same after normalisation\n%s", r)
	}
	for _, want := range []string{"<sandbox>", "<container:hello/0>", "<root-dir>", "<log-dir>", "<pod-uid>", "<time>", "time per stage", "RunPodSandbox", "CreateContainer (hello)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text output lacks %q", want)
		}
	}
	js := parseDiff(t, e.podstep(t, "diff", a, b, "--output=json"))
	values := func(subst []struct{ Placeholder, Value string }) map[string]string {
		m := map[string]string{}
		for _, s := range subst {
			m[s.Placeholder] = s.Value
		}
		return m
	}
	va, vb := values(js.A.Substs), values(js.B.Substs)
	for _, ph := range []string{"<sandbox>", "<container:hello/0>", "<root-dir>", "<log-dir>"} {
		if va[ph] == "" || va[ph] == vb[ph] {
			t.Errorf("normalisation %s: A %q, B %q; want two different values (each run's own)", ph, va[ph], vb[ph])
		}
	}
	if js.Counts.Differ+js.Counts.OnlyA+js.Counts.OnlyB != 0 || js.Counts.Same < 10 {
		t.Errorf("counts %+v: want only calls the same (at least 10)", js.Counts)
	}

	// A different pod: name, command, an env var.
	pod, err := os.ReadFile(e.pod("hello"))
	if err != nil {
		t.Fatal(err)
	}
	variant := strings.NewReplacer("name: hello\nspec", "name: hello-other\nspec",
		"echo hello from podstep; sleep 3600", "echo other; sleep 3600",
		"    imagePullPolicy:", "    env:\n    - name: GREETING\n      value: hi\n    imagePullPolicy:").Replace(string(pod))
	if variant == string(pod) || strings.Count(variant, "hello-other")+strings.Count(variant, "GREETING") != 2 {
		t.Fatalf("the variant manifest was not made:\n%s", variant)
	}
	vfile := filepath.Join(t.TempDir(), "hello-other.yaml")
	if err := os.WriteFile(vfile, []byte(variant), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.recordPod(t, vfile, "c")

	r = e.podstep(t, "diff", a, c)
	if r.code != 2 || !strings.Contains(r.stderr, "the pod specs differ: spec.containers[0].command[2]") ||
		!strings.Contains(r.stderr, "--different-pods") || r.stdout != "" {
		t.Errorf("diff of different manifests: want exit 2, the spec fields that differ, the --different-pods hint, no output\n%s", r)
	}
	r = e.podstep(t, "diff", a, c, "--different-pods", "--output=json")
	if r.code != 1 || !strings.Contains(r.stderr, "warning: the pod specs differ") {
		t.Fatalf("diff --different-pods: want exit 1 and a warning\n%s", r)
	}
	js = parseDiff(t, r)
	if js.Counts.OnlyA+js.Counts.OnlyB != 0 {
		t.Errorf("counts %+v: the two pods make the same calls in the same order", js.Counts)
	}
	got := map[string][]string{}
	for _, call := range js.Calls {
		for _, f := range call.Fields {
			got[call.Method] = append(got[call.Method], f.Path)
		}
	}
	sandboxFields := []string{`config.hostname`, `config.labels["io.kubernetes.pod.name"]`, `config.log_directory`, `config.metadata.name`}
	want := map[string][]string{
		"RunPodSandbox": sandboxFields,
		// Not io.kubernetes.container.hash: the kubelet hashes a container's name and image only.
		"CreateContainer": append([]string{`config.command[2]`,
			`config.envs["GREETING"].key`, `config.envs["GREETING"].value`, `config.labels["io.kubernetes.pod.name"]`},
			`sandbox_config.hostname`, `sandbox_config.labels["io.kubernetes.pod.name"]`, `sandbox_config.log_directory`, `sandbox_config.metadata.name`),
	}
	for m, paths := range got {
		sort.Strings(paths)
		w := want[m]
		sort.Strings(w)
		if strings.Join(paths, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: fields that differ:\n  %s\nwant:\n  %s", m, strings.Join(paths, "\n  "), strings.Join(w, "\n  "))
		}
	}
	for m := range want {
		if _, ok := got[m]; !ok {
			t.Errorf("%s: no field differs; want %v", m, want[m])
		}
	}

	// Bad input.
	r = e.podstep(t, "diff", a, e.pod("hello"))
	if r.code != 2 || !strings.Contains(r.stderr, e.pod("hello")+": not a podstep recording") || r.stdout != "" {
		t.Errorf("diff with a manifest: want exit 2 and not a podstep recording\n%s", r)
	}
	text := gunzip(t, b)
	cut := filepath.Join(t.TempDir(), "cut.rec")
	if err := os.WriteFile(cut, []byte(text[:len(text)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.podstep(t, "diff", a, cut)
	if r.code != 2 || !strings.Contains(r.stderr, cut+": line ") || r.stdout != "" {
		t.Errorf("diff with a cut recording: want exit 2 and where it is cut\n%s", r)
	}
}
