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

// TestKeptPodOnSimCleanupGivenDirs: a pod kept on the simulated runtime
// with --root-dir and --log-dir is removed by `cleanup --sim` given the
// same dirs (it once looked only in the temp dir and said "nothing to
// clean", leaving the pod's dirs, and the next run failed
// PodAlreadyExists); one dir given alone is cleaned too.
func TestKeptPodOnSimCleanupGivenDirs(t *testing.T) {
	pod, _ := filepath.Abs("../../testdata/pods/hello.yaml")
	for _, tc := range []struct {
		name  string
		flags func(root, logs string) []string
	}{
		{"both dirs", func(root, logs string) []string { return []string{"--root-dir", root, "--log-dir", logs} }},
		{"root dir alone", func(root, _ string) []string { return []string{"--root-dir", root} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, base := t.TempDir(), t.TempDir()
			root, logs := filepath.Join(base, "root"), filepath.Join(base, "logs")
			flags := tc.flags(root, logs)
			code, out := podstepIn(t, tmp, append([]string{"run", "--auto", "-q", "--keep", "--sim", "-f", pod}, flags...)...)
			if code != 0 {
				t.Fatalf("run --keep: exit %d\n%s", code, out)
			}
			if left, _ := filepath.Glob(filepath.Join(root, "pods", "*")); len(left) != 1 {
				t.Fatalf("kept pod dirs = %v, want 1", left)
			}
			code, out = podstepIn(t, tmp, append([]string{"cleanup", "--sim"}, flags...)...)
			if code != 0 || !strings.Contains(out, "✓ removed "+filepath.Join(root, "pods")) || strings.Contains(out, "nothing to clean") {
				t.Fatalf("cleanup --sim %v: exit %d\n%s", flags, code, out)
			}
			if left, _ := filepath.Glob(filepath.Join(root, "pods", "*")); len(left) != 0 {
				t.Errorf("pod dirs left after cleanup: %v", left)
			}
			if left, _ := filepath.Glob(filepath.Join(logs, "*")); len(left) != 0 {
				t.Errorf("log dirs left after cleanup: %v", left)
			}
			code, out = podstepIn(t, tmp, append([]string{"run", "--auto", "-q", "--sim", "-f", pod}, flags...)...)
			if code != 0 {
				t.Errorf("second run: exit %d\n%s", code, out)
			}
			code, out = podstepIn(t, tmp, append([]string{"cleanup", "--sim"}, flags...)...)
			if code != 0 || !strings.Contains(out, "nothing to clean") || !strings.Contains(out, root) {
				t.Errorf("cleanup --sim with nothing left: exit %d\n%s", code, out)
			}
		})
	}
}
