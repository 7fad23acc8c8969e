package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/rmtree/rmtreetest"
)

// TestCleanupRefusesOtherUsersRootDir is issue 34's hole 3 as it was
// found: uid 65534 owns --root-dir, keeps a marked pod dir in it, and keeps
// exchanging `pods` with a link to a root-owned victim's parent, while root
// runs `podstep cleanup --root-dir DIR` again and again. Each run is
// refused outright (exit 2, naming the dir, its owner and mode, and what
// is expected) and the victim stays. (Before, root ran the marker check,
// then RemoveAll by path, and removed the victim through the link;
// internal/cleanup's TestOrphansRaceOtherUser races the removal itself.)
// The same holds for run's --log-dir.
func TestCleanupRefusesOtherUsersRootDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: root runs cleanup, uid 65534 owns --root-dir")
	}
	base, err := os.MkdirTemp("", "cleanup-e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(base, 0o755))
	const uid = "etc"
	victimParent := filepath.Join(base, "victim")
	victim := filepath.Join(victimParent, uid)
	must(os.MkdirAll(victim, 0o755))
	must(os.WriteFile(filepath.Join(victim, "precious"), []byte("x"), 0o644))
	root, logs := filepath.Join(base, "root"), filepath.Join(base, "logs")
	must(os.Mkdir(root, 0o755))
	must(os.Chown(root, 65534, 65534))
	dead := exec.Command("true")
	must(dead.Run())
	marker, err := json.Marshal(map[string]any{"uid": uid, "dir": filepath.Join(root, "pods", uid), "pid": dead.Process.Pid, "simulated": true})
	must(err)
	rmtreetest.Swapper(t, base, root, "pods", victimParent, filepath.Join("pods", uid, mark.File), marker)
	// Seen once is started: the swapper exchanges pods for the link all
	// the time, so a second look may find the link (no marker there).
	started := false
	for i := 0; i < 1000 && !started; i++ {
		_, err := os.Lstat(filepath.Join(root, "pods", uid, mark.File))
		if started = err == nil; !started {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !started {
		t.Fatal("the other user's process did not start: no marker under pods in 10 s")
	}
	for i := 0; i < 20; i++ {
		cmd := exec.Command(bin, "cleanup", "--root-dir", root, "--log-dir", logs, "-r", "unix:///nonexistent/podstep.sock")
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		want := fmt.Sprintf("--root-dir %s (owner uid 65534, mode 0755) refused: %s is owned by uid 65534: expected a directory owned by uid 0", root, root)
		if code != ExitUsage || !strings.Contains(string(out), want) || strings.Contains(string(out), "removed") {
			t.Fatalf("run %d: exit %d, output %q; want exit 2 and %q", i, code, out, want)
		}
		if _, err := os.Stat(filepath.Join(victim, "precious")); err != nil {
			t.Fatalf("run %d: the victim was removed: %v", i, err)
		}
	}
	// run too: its --log-dir belongs to the other user.
	code, _, errOut := run(t, "run", "--auto", "--sim", "-f", "../../testdata/pods/hello.yaml", "--root-dir", filepath.Join(base, "mine"), "--log-dir", root)
	if code != ExitUsage || !strings.Contains(errOut, "--log-dir "+root+" (owner uid 65534, mode 0755) refused") {
		t.Errorf("run with another user's --log-dir: exit %d, stderr %q; want exit 2 and the refusal", code, errOut)
	}
}

// TestCleanupHugeMarker: a pod dir whose marker is a 4 GiB sparse file is
// kept, and cleanup says why and ends normally (exit 4: something kept),
// without reading the file (before: out of memory).
func TestCleanupHugeMarker(t *testing.T) {
	root, logs := dirs(t)
	pod := filepath.Join(root, "pods", "u1")
	if err := os.MkdirAll(pod, 0o750); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(pod, mark.File)
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, 4<<30); err != nil {
		t.Fatal(err)
	}
	// No runtime: what is on disk is cleaned all the same.
	old := cri.WellKnownEndpoints
	cri.WellKnownEndpoints = nil
	t.Cleanup(func() { cri.WellKnownEndpoints = old })
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", "")
	t.Setenv("TMPDIR", t.TempDir())
	code, out, errOut := run(t, "cleanup", "--root-dir", root, "--log-dir", logs)
	want := "✗ kept " + pod + ": " + f + " is larger than 65536 bytes: not a file podstep wrote"
	if code != ExitLeftBehind || !strings.Contains(out, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 4 and %q", code, out, errOut, want)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("%s removed: %v", pod, err)
	}
}

// TestHelperSwapper is the other user's process of
// TestCleanupRefusesOtherUsersRootDir.
func TestHelperSwapper(t *testing.T) { rmtreetest.Helper(t) }
