package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// corpusInvalid are the corpus objects an API server refuses: exit 2 with
// this field path.
var corpusInvalid = map[string]string{
	// kustomize's base: commonLabels adds the selector; apps/v1 requires one.
	"metrics-server__manifests__base__deployment.yaml Deployment/metrics-server": "spec.selector: required value",
	// The example puts preferred terms under required (a list, not a NodeSelector).
	"k8s-website__content__en__examples__pods__pod-with-node-affinity.yaml Pod/with-node-affinity": "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: wrong type",
}

var corpusKinds = map[string]bool{"Pod": true, "Deployment": true, "StatefulSet": true, "DaemonSet": true,
	"ReplicaSet": true, "ReplicationController": true, "Job": true, "CronJob": true}

// corpusDir is ../shared/realworld/src from the repository root (the
// directory with go.mod); the test is skipped when it is absent, and fails
// with CI=true.
func corpusDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	// ../shared/realworld/src from the repository root; a git worktree
	// (/work/wt/NAME) finds it beside an ancestor of its root instead.
	src := filepath.Join(dir, "..", "shared", "realworld", "src")
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "..", "shared", "realworld", "src")); err == nil {
			src = filepath.Join(d, "..", "shared", "realworld", "src")
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real-world corpus %s is missing (CI=true: it must be there): %v", src, err)
		}
		t.Skipf("the real-world corpus %s is absent: %v", src, err)
	}
	return src
}

// corpusRefs lists the Pods and workloads of a file as KIND/NAME, read with
// a YAML decoder of its own (v1 Lists item by item).
func corpusRefs(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type obj struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Items []obj `yaml:"items"`
	}
	var refs []string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o obj
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		items := []obj{o}
		if o.Kind == "List" {
			items = o.Items
		}
		for _, it := range items {
			if corpusKinds[it.Kind] {
				refs = append(refs, it.Kind+"/"+it.Metadata.Name)
			}
		}
	}
	return refs
}

// TestRealWorldWorkloads plans every Pod and workload of every upstream
// file in ../shared/realworld/src with plan -f SRC --select KIND/NAME: exit
// 0, except the objects an API server refuses (exit 2, their field path);
// a file with several and no --select exits 2 listing them all.
func TestRealWorldWorkloads(t *testing.T) {
	src := corpusDir(t)
	files, err := filepath.Glob(filepath.Join(src, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".yml") {
			continue
		}
		base := filepath.Base(f)
		refs := corpusRefs(t, f)
		for _, ref := range refs {
			t.Run(base+"/"+ref, func(t *testing.T) {
				code, out, errs := run(t, "plan", "-f", f, "--select", ref, "-o", "json")
				if want, bad := corpusInvalid[base+" "+ref]; bad {
					if code != 2 || !strings.Contains(errs, want) {
						t.Fatalf("exit %d, stderr %q; want exit 2 with %q", code, errs, want)
					}
					return
				}
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				if !strings.Contains(out, `"stage":"admit"`) {
					t.Errorf("no admit step in the plan:\n%.400s", out)
				}
				if !strings.HasPrefix(ref, "Pod/") && !strings.Contains(out, `"notes":[`) {
					t.Errorf("the plan of %s has no notes naming the controller rules:\n%.400s", ref, out)
				}
			})
			planned++
		}
		if len(refs) > 1 {
			t.Run(base+"/no --select", func(t *testing.T) {
				code, _, errs := run(t, "plan", "-f", f)
				if code != 2 {
					t.Fatalf("exit %d; want 2 (several pods and workloads)", code)
				}
				sorted := append([]string{}, refs...)
				sort.Strings(sorted)
				if !strings.Contains(errs, strings.Join(sorted, ", ")) || !strings.Contains(errs, "--select") {
					t.Errorf("stderr %q: want every KIND/NAME (%s) and --select", errs, strings.Join(sorted, ", "))
				}
			})
		}
	}
	if planned < 100 {
		t.Errorf("planned %d pods and workloads; the corpus has over 100", planned)
	}
}
