package fleet

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/golden"
)

// load reads testdata/NODE.json, real `podstep run --sim -o json` output
// (testdata/gen.sh), as node NODE's runner log.
func load(t testing.TB, node string) *Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", node+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &Result{Node: node, Status: Ran, Kubelet: "v1.37.0"}
	if err := Parse(f, r); err != nil {
		t.Fatal(err)
	}
	if r.Summary != nil {
		r.ExitCode = r.Summary.ExitCode
	}
	return r
}

func TestAnalyze(t *testing.T) {
	notStarted := &Result{Node: "node-x", Status: NotStarted, Kubelet: "v1.37.0", Error: "no runner pod started on the node within 20s (pod Pending: the node has no kubelet?)"}
	crashed := &Result{Node: "node-y", Status: Crashed, ExitCode: 2, Error: "runner exited with code 2 and no summary",
		LastLog: []string{"error: \x1b[31mpod.yaml: spec.containers[0].image: required"}}
	for _, tc := range []struct {
		name     string
		nodes    []string
		extra    []*Result
		groups   [][]string
		oddNode  string // the odd group's representative ("" when none)
		oddStep  string
		oddWhy   string
		calls    []string // the differing calls of the odd step, "op method"
		outliers []string // "node stage"
		notRun   []string
		exit     int
	}{
		{name: "all alike", nodes: []string{"node-a", "node-b", "node-c", "node-d"},
			groups: [][]string{{"node-a", "node-b", "node-c", "node-d"}}, exit: 0},
		{name: "one node lacks the image, one is slow", nodes: []string{"node-a", "node-b", "node-e", "node-c", "node-d", "node-f"},
			groups:  [][]string{{"node-a", "node-b", "node-c", "node-d", "node-f"}, {"node-e"}},
			oddNode: "node-e", oddStep: "pull/hello", oddWhy: "ErrImageNeverPull",
			calls:    []string{"~ ImageStatus"},
			outliers: []string{"node-f sandbox"}, exit: 1},
		{name: "a tie goes to the nodes that passed", nodes: []string{"node-e", "node-a"},
			groups: [][]string{{"node-a"}, {"node-e"}}, oddNode: "node-e", oddStep: "pull/hello", oddWhy: "ErrImageNeverPull",
			calls: []string{"~ ImageStatus"}, exit: 1},
		{name: "runners that did not run", nodes: []string{"node-a", "node-b"}, extra: []*Result{notStarted, crashed},
			groups: [][]string{{"node-a", "node-b"}}, notRun: []string{"node-x", "node-y"}, exit: 3},
		{name: "interrupted", nodes: []string{"node-e"}, extra: []*Result{{Node: "node-z", Status: Interrupted}},
			groups: [][]string{{"node-e"}}, notRun: []string{"node-z"}, exit: 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []*Result
			for _, n := range tc.nodes {
				rs = append(rs, load(t, n))
			}
			rs = append(rs, tc.extra...)
			a := Analyze(rs)
			var groups [][]string
			for _, g := range a.Groups {
				groups = append(groups, g.Nodes)
			}
			if !equal(groups, tc.groups) {
				t.Errorf("groups %v, want %v", groups, tc.groups)
			}
			if tc.oddNode == "" {
				if len(a.Odd) != 0 {
					t.Errorf("odd %+v, want none", a.Odd)
				}
			} else {
				if len(a.Odd) != 1 {
					t.Fatalf("odd %+v, want one group", a.Odd)
				}
				o := a.Odd[0]
				if o.Node != tc.oddNode || o.Step == nil || o.Step.Name != tc.oddStep || o.Step.Reason != tc.oddWhy {
					t.Errorf("odd %s at %+v, want %s at %s (%s)", o.Node, o.Step, tc.oddNode, tc.oddStep, tc.oddWhy)
				}
				var calls []string
				for _, c := range o.Calls {
					calls = append(calls, string(c.Op)+" "+c.Method)
					if c.Op == "~" && len(c.Fields) == 0 && c.Code == c.Their {
						t.Errorf("call %s differs with no field nor code", c.Method)
					}
				}
				if strings.Join(calls, ",") != strings.Join(tc.calls, ",") {
					t.Errorf("calls %v, want %v", calls, tc.calls)
				}
			}
			var outl []string
			for _, o := range a.Outliers {
				outl = append(outl, o.Node+" "+string(o.Stage))
			}
			if strings.Join(outl, ",") != strings.Join(tc.outliers, ",") {
				t.Errorf("outliers %v, want %v", outl, tc.outliers)
			}
			if strings.Join(a.NotRun, ",") != strings.Join(tc.notRun, ",") {
				t.Errorf("not run %v, want %v", a.NotRun, tc.notRun)
			}
			if a.ExitCode != tc.exit {
				t.Errorf("exit %d, want %d", a.ExitCode, tc.exit)
			}
			var text bytes.Buffer
			if err := WriteText(&text, rs, a); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", strings.ReplaceAll(tc.name, " ", "-")+".txt"), text.String())
			if strings.ContainsRune(text.String(), 0x1b) {
				t.Errorf("the table holds a raw escape character:\n%s", text.String())
			}
			var js bytes.Buffer
			if err := WriteJSON(&js, "default/hello", rs, a); err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Nodes) != len(rs) || back.Analysis.ExitCode != tc.exit {
				t.Errorf("JSON: %d nodes exit %d, want %d nodes exit %d", len(back.Nodes), back.Analysis.ExitCode, len(rs), tc.exit)
			}
			for i, n := range back.Nodes {
				if len(n.Steps) != len(rs[i].Steps) {
					t.Errorf("JSON: node %s has %d steps, want %d", n.Node, len(n.Steps), len(rs[i].Steps))
				}
			}
		})
	}
}

func equal(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			return false
		}
	}
	return true
}

func TestParseKeepsLastLog(t *testing.T) {
	r := &Result{}
	var in strings.Builder
	for i := 0; i < 30; i++ {
		in.WriteString("line\x07 " + string(rune('a'+i%26)) + "\n")
	}
	in.WriteString(`{"type":"summary","outcome":"running","exit_code":0}` + "\n")
	if err := Parse(strings.NewReader(in.String()), r); err != nil {
		t.Fatal(err)
	}
	if len(r.LastLog) != maxLastLog || r.Summary == nil || r.Summary.Outcome != "running" {
		t.Fatalf("last log %d lines, summary %+v", len(r.LastLog), r.Summary)
	}
	if strings.ContainsRune(strings.Join(r.LastLog, ""), 7) {
		t.Errorf("a control character reached LastLog: %q", r.LastLog)
	}
}
