package steps

import (
	"context"
	"strings"
	"testing"
)

// TestKinds checks every planned step, restarts and teardown included,
// has a kind and the name made from it, that kinds have distinct names,
// and which kinds wait.
func TestKinds(t *testing.T) {
	seen := map[string]Kind{}
	for k := KindAdmit; k <= KindReset; k++ {
		if k.String() == "" || seen[k.String()] != 0 {
			t.Errorf("kind %d: name %q empty or taken by %d", k, k.String(), seen[k.String()])
		}
		seen[k.String()] = k
	}
	if KindOf("") != 0 || KindOf("no-such/app") != 0 {
		t.Errorf("KindOf of names no kind makes: %d, %d", KindOf(""), KindOf("no-such/app"))
	}
	if Kind(0).String() != "" || (KindReset+1).String() != "" {
		t.Errorf("out-of-range kinds have names")
	}
	waits := map[Kind]bool{KindWaitInit: true, KindBackoff: true, KindStartup: true, KindRelist: true, KindReady: true}
	for k := KindAdmit; k <= KindReset; k++ {
		if k.Waits() != waits[k] {
			t.Errorf("%s.Waits() = %v, want %v", k, k.Waits(), waits[k])
		}
	}

	// A crash loop with a restart, init containers, a sidecar with a
	// startup probe, hooks and the ready stage: every kind is planned.
	o := testOptions(t)
	o.WaitReady = true
	planned := map[Kind]bool{}
	for _, file := range []string{"testdata/pods/init.yaml", "testdata/pods/hooks.yaml", "internal/scenario/data/sidecar-startup-probe.yaml", "internal/scenario/data/crashloop.yaml", "testdata/pods/image-volume.yaml", "internal/scenario/data/restart-all-containers.yaml"} {
		e := New(load(t, repoFile(file)), newSim(t), o)
		if strings.Contains(file, "crashloop") || strings.Contains(file, "restart-all") {
			for !e.Finished() {
				if err := e.Continue(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.Teardown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, s := range e.Steps() {
			planned[s.Kind] = true
			if s.Kind == 0 || s.Name != s.Kind.stepName(s.Container) {
				t.Errorf("%s: step %q has kind %d (%s), container %q", file, s.Name, s.Kind, s.Kind, s.Container)
			}
			if KindOf(s.Name) != s.Kind {
				t.Errorf("%s: KindOf(%q) = %s, want %s", file, s.Name, KindOf(s.Name), s.Kind)
			}
			if s.Kind.PerContainer() != (s.Container != "") {
				t.Errorf("%s: step %q: per container %v, container %q", file, s.Name, s.Kind.PerContainer(), s.Container)
			}
		}
	}
	for k := KindAdmit; k <= KindReset; k++ {
		if !planned[k] {
			t.Errorf("kind %s never planned", k)
		}
	}
}
