package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/record"
)

// shippedExamples are the workshop recordings hack/record-examples.sh
// makes on a real containerd, in each of exampleSets (containerd 2 at the
// top, containerd 1.6 in its folder); the other files in
// testdata/recordings are fixtures kept as they are on purpose (older
// formats, a real kubelet's calls through `podstep proxy`).
var (
	exampleSets     = []string{"../../testdata/recordings", "../../testdata/recordings/containerd-1.6"}
	shippedExamples = []string{"hello", "init", "poststart-fails", "crashloop", "pull-401", "out-of-cpu", "sidecar-startup-probe"}
	keptFixtures    = []string{"hello.v1.rec", "crashloop.v1.rec.gz", "kubelet-init.rec.gz"}
)

// staleFieldsIgnored are request fields a fresh run on the simulator sends
// differently from a containerd run for reasons other than podstep's
// version: the image ID the runtime answered, and the huge page sizes of
// the recording machine.
var staleFieldsIgnored = regexp.MustCompile(`^config\.image\.image$|\.hugepage_limits\[`)

// simOnlyKey is the key only a simulated run's lines carry: what the
// simulator assumed (a script's exit, a probe's answer).
const simOnlyKey = "rests_on"

// TestShippedRecordingsCurrent: each workshop recording holds what today's
// podstep sends and records. Its pod (from the recording's header) is run
// again on the simulator with the recording's flags; every CRI request the
// two runs both sent must have the same fields after diff's normalisation
// (runtime-chosen values aside), and the recording's lines carry every key
// a fresh recording's lines of the same types do (pod-state changes,
// events), the simulator's own assumptions aside. Issue 33 item
// 10: the handouts lacked the `pod: STATUS` lines and sent the old
// user_specified_image. When it fails, re-record: hack/record-examples.sh.
func TestShippedRecordingsCurrent(t *testing.T) {
	for i, set := range exampleSets {
		files, _ := filepath.Glob(filepath.Join(set, "*"))
		for _, f := range files {
			base := filepath.Base(f)
			if st, err := os.Stat(f); err == nil && st.IsDir() && slices.Contains(exampleSets, f) {
				continue
			}
			if !slices.Contains(shippedExamples, strings.TrimSuffix(base, ".rec.gz")) && (i > 0 || !slices.Contains(keptFixtures, base)) {
				t.Errorf("%s: neither a shipped example (hack/record-examples.sh) nor a kept fixture: add it to one list", f)
			}
		}
		for _, name := range shippedExamples {
			t.Run(filepath.Base(set)+"/"+name, func(t *testing.T) {
				checkShippedRecording(t, filepath.Join(set, name+".rec.gz"))
			})
		}
	}
}

// checkShippedRecording is TestShippedRecordingsCurrent for one file.
func checkShippedRecording(t *testing.T, shipped string) {
	name := strings.TrimSuffix(filepath.Base(shipped), ".rec.gz")
	rd, err := record.NewReader(strings.NewReader(string(golden.ReadFile(t, shipped))))
	if err != nil {
		t.Fatal(err)
	}
	h := rd.Header()
	if h.Version != record.Version {
		t.Errorf("%s is of recording format v%d, today's is v%d: re-record with hack/record-examples.sh", shipped, h.Version, record.Version)
	}
	if h.Runtime.Simulated {
		t.Fatalf("%s was recorded on the simulator; the examples are recorded on containerd", shipped)
	}
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	writeBundle(t, manifest, h.Manifest)
	root, logs := dirs(t)
	fresh := filepath.Join(t.TempDir(), name+".rec.gz")
	args := []string{"run", "--auto", "--sim", "--no-color", "-f", manifest, "--record", fresh, "--root-dir", root, "--log-dir", logs}
	for _, flag := range []string{"grace-period", "max-restarts", "backoff-scale", "wait-ready", "settle"} {
		if v, ok := h.Flags[flag]; ok {
			args = append(args, "--"+flag+"="+v)
		}
	}
	if code, _, errOut := run(t, args...); code != 0 && code != ExitPodFailed {
		t.Fatalf("fresh run: exit %d: %s", code, errOut)
	}
	a, err := diff.Load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	b, err := diff.Load(fresh)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range diff.Compare(a, b).Calls {
		for _, fd := range e.Fields {
			// Which attempt of a restarted container a relist reads first
			// is the order the runtime lists them in.
			listOrder := e.Method == "ContainerStatus" && fd.Path == "container_id"
			if !staleFieldsIgnored.MatchString(fd.Path) && !listOrder {
				t.Errorf("%s (%s) %s: recorded %s, today %s: re-record with hack/record-examples.sh", e.Method, e.StepA, fd.Path, orAbsent(fd.A), orAbsent(fd.B))
			}
		}
	}
	want, got := lineKeys(t, fresh), lineKeys(t, shipped)
	for typ, keys := range want {
		if got[typ] == nil {
			continue // a line type this run's outcome has none of (logs of a container that never ran)
		}
		for _, k := range keys {
			if k != simOnlyKey && !slices.Contains(got[typ], k) {
				t.Errorf("no %q line of the recording has %q, a fresh one's do: re-record with hack/record-examples.sh", typ, k)
			}
		}
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// writeBundle writes a recording's manifest as a multi-document YAML file.
func writeBundle(t *testing.T, path string, m record.Manifest) {
	t.Helper()
	var objs []any
	objs = append(objs, m.Pod)
	for _, s := range m.Secrets {
		objs = append(objs, s)
	}
	for _, c := range m.ConfigMaps {
		objs = append(objs, c)
	}
	if m.Node != nil {
		objs = append(objs, m.Node)
	}
	var docs []string
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(y))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineKeys maps each line type of a recording to the top-level keys its
// lines carry (the union over its lines), sorted.
func lineKeys(t *testing.T, path string) map[string][]string {
	t.Helper()
	sets := map[string]map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(readRecording(t, path)), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var typ string
		_ = json.Unmarshal(m["type"], &typ)
		if sets[typ] == nil {
			sets[typ] = map[string]bool{}
		}
		for k := range m {
			sets[typ][k] = true
		}
	}
	out := map[string][]string{}
	for typ, set := range sets {
		for k := range set {
			out[typ] = append(out[typ], k)
		}
		sort.Strings(out[typ])
	}
	return out
}
