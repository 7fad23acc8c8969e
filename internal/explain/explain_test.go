package explain

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/explain.md")

// TestSeenTextsMatch: every text a runtime (or the kubelet) answered in
// the integration test finds its own entry, with each of its reasons, and
// no entry before it in the table takes it.
func TestSeenTextsMatch(t *testing.T) {
	for _, e := range table {
		if len(e.Seen) == 0 {
			t.Errorf("%s: no Seen text: an entry must be matched on what a runtime answered", e.ID)
		}
		for _, r := range e.Reasons {
			for _, s := range e.Seen {
				f := Failure{Reason: r, Message: s}
				if got := Find(f); got == nil || got.ID != e.ID {
					t.Errorf("%s: Find(reason %s, %q) = %v, want %s", e.ID, r, s, id(got), e.ID)
				}
				// The same text as a container's last log line (runc's exec
				// failures are written there).
				f = Failure{Reason: r, Message: "container \"app\" exited with code 1 (Error)", Log: []string{"some line", s}}
				if e.Pattern != nil && e.ID != "container-exited-error" {
					if got := Find(f); got == nil || got.ID != e.ID {
						t.Errorf("%s: Find(reason %s, log %q) = %v, want %s", e.ID, r, s, id(got), e.ID)
					}
				}
			}
		}
	}
}

// TestNoMatch: a failure no entry knows gets none, and a known text under
// another reason does not match.
func TestNoMatch(t *testing.T) {
	for _, f := range []Failure{
		{Reason: "ErrImagePull", Message: "failed to pull and unpack image: dial tcp 10.0.0.1:443: i/o timeout"},
		{Reason: "CreatePodSandboxError", Message: "open /etc/resolv.conf: no such file or directory"},
		{Reason: "RunContainerError", Message: "401 Unauthorized"},
		{Reason: "", Message: "exec format error"},
	} {
		if got := Find(f); got != nil {
			t.Errorf("Find(%+v) = %s, want none", f, got.ID)
		}
	}
}

// TestEntriesWhole: every entry says all a user needs, its ID is stable
// kebab-case and unique, and its reproducing case exists in the
// integration test.
func TestEntriesWhole(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", TestFile))
	if err != nil {
		t.Fatalf("read the integration test: %v", err)
	}
	kebab := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, e := range table {
		if !kebab.MatchString(e.ID) || seen[e.ID] {
			t.Errorf("ID %q: want unique kebab-case", e.ID)
		}
		seen[e.ID] = true
		if e.Title == "" || len(e.Reasons) == 0 || len(e.Causes) == 0 || e.Next == "" || len(e.Confirm) == 0 || e.Fix == "" || e.Runtimes == "" {
			t.Errorf("%s: an entry needs a title, reasons, causes, what the kubelet does next, commands to confirm, a fix and where its texts come from", e.ID)
		}
		if !bytes.Contains(src, []byte(`name: "`+e.Reproduced+`"`)) {
			t.Errorf("%s: %s has no case name: %q (Reproduced)", e.ID, TestFile, e.Reproduced)
		}
	}
}

// TestExplainFillsCommands: the commands name the failing pod's objects.
func TestExplainFillsCommands(t *testing.T) {
	x := Get("oom-killed").Explain(Values{Pod: "web", Namespace: "shop", Container: "app", ContainerID: "abc123", Image: "nginx:1"})
	all := strings.Join(x.Confirm, "\n")
	for _, want := range []string{"crictl inspect abc123", "kubectl -n shop describe pod web"} {
		if !strings.Contains(all, want) {
			t.Errorf("confirm lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "{") && strings.Contains(all, "{POD}") {
		t.Errorf("a placeholder left:\n%s", all)
	}
}

// TestDoc: docs/explain.md is the table (go test -run TestDoc -update).
func TestDoc(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "explain.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/explain -run TestDoc -update)", err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("docs/explain.md is stale: go test ./internal/explain -run TestDoc -update")
	}
}

func id(e *Entry) string {
	if e == nil {
		return "<none>"
	}
	return e.ID
}

// TestCRIOTexts: CRI-O's words for the same failures, as its source
// writes them (untested against a running CRI-O: the entries' Runtimes
// say so), find the same entries.
func TestCRIOTexts(t *testing.T) {
	for _, tc := range []struct{ reason, msg, want string }{
		{"CreatePodSandboxError", `error reserving pod name k8s_web_default_5e1c_0 for id 3ebef1dc: name is reserved`, "sandbox-name-reserved"},
		{"NetworkNotReady", `container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: No CNI configuration file in /etc/cni/net.d/. Has your network provider started?`, "cni-not-initialized"},
		{"ErrImagePull", `choosing image instance: no image found in manifest list for architecture "amd64", variant "", OS "linux"`, "image-platform-mismatch"},
	} {
		if got := Find(Failure{Reason: tc.reason, Message: tc.msg}); got == nil || got.ID != tc.want {
			t.Errorf("Find(%s, %q) = %s, want %s", tc.reason, tc.msg, id(got), tc.want)
		}
	}
}
