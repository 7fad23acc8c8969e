package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// podstepIn runs the built binary with TMPDIR=tmp (where runs on the
// simulated runtime keep their dirs) and returns its exit code and output.
func podstepIn(t *testing.T, tmp string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestKeptPodOnSimCleanup: a pod kept on the simulated runtime is not a
// dead end: the run says how to remove it, `cleanup --sim` removes it, and
// a second run of the manifest works; nothing is left.
func TestKeptPodOnSimCleanup(t *testing.T) {
	tmp := t.TempDir()
	pod, _ := filepath.Abs("../../testdata/pods/hello.yaml")
	code, out := podstepIn(t, tmp, "run", "--auto", "-q", "--keep", "--sim", "-f", pod)
	if code != 0 || !strings.Contains(out, "kept (remove with: podstep cleanup --sim)") {
		t.Fatalf("run --keep: exit %d\n%s", code, out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "podstep-sim-*", "root", "pods", "*")); len(left) != 1 {
		t.Fatalf("kept pod dirs = %v, want 1", left)
	}
	code, out = podstepIn(t, tmp, "cleanup", "--sim")
	if code != 0 || !strings.Contains(out, "✓ removed "+tmp) {
		t.Fatalf("cleanup --sim: exit %d\n%s", code, out)
	}
	code, out = podstepIn(t, tmp, "run", "--auto", "-q", "--sim", "-f", pod)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	assertEmpty(t, tmp)
	code, out = podstepIn(t, tmp, "cleanup", "--sim")
	if code != 0 || !strings.Contains(out, "nothing to clean") {
		t.Errorf("cleanup --sim with nothing left: exit %d\n%s", code, out)
	}
}

// TestConcurrentRunsOnSim: runs of one manifest at once on the simulated
// runtime, by one user, all work: each has its own runtime and dirs.
func TestConcurrentRunsOnSim(t *testing.T) {
	tmp := t.TempDir()
	pod, _ := filepath.Abs("../../testdata/pods/hello.yaml")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, out := podstepIn(t, tmp, "run", "--auto", "-q", "--sim", "-f", pod); code != 0 {
				t.Errorf("run %d: exit %d\n%s", i, code, out)
			}
		}()
	}
	wg.Wait()
	assertEmpty(t, tmp)
}
