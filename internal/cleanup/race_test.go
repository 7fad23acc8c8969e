package cleanup_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/cleanup"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/rmtree/rmtreetest"
)

// TestOrphansRaceOtherUser is issue 34's hole 3 at the package level (the
// owner check of --root-dir, which refuses such a root outright, is the
// session's and is bypassed here): uid 65534 owns the root dir, keeps a
// marked pod dir in it, and keeps exchanging `pods` with a link to the
// parent of a root-owned victim dir of the pod's uid, while root runs
// Orphans again and again. The victim must survive every time. (On the
// path-based check then os.RemoveAll, root removed the victim.)
func TestOrphansRaceOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: root removes, uid 65534 attacks")
	}
	base, err := os.MkdirTemp("", "cleanup-race")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	const uid = "etc" // a pod uid may be any name: the user picks the victim's
	victimParent := filepath.Join(base, "victim")
	victim := filepath.Join(victimParent, uid)
	must(t, os.MkdirAll(victim, 0o755))
	must(t, os.WriteFile(filepath.Join(victim, "precious"), []byte("x"), 0o644))
	root, logs := filepath.Join(base, "root"), filepath.Join(base, "logs")
	must(t, os.Mkdir(root, 0o755))
	must(t, os.Chown(root, 65534, 65534))
	dead := exec.Command("true")
	must(t, dead.Run())
	marker, err := json.Marshal(map[string]any{"uid": uid, "dir": filepath.Join(root, "pods", uid), "pid": dead.Process.Pid, "simulated": true})
	must(t, err)
	rmtreetest.Swapper(t, base, root, "pods", victimParent, filepath.Join("pods", uid, mark.File), marker)

	for i := 0; i < 1000; i++ { // the user's process starting
		if _, err := os.Lstat(filepath.Join(root, "pods", uid, mark.File)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// At least 3000 tries, and on until 100 removals raced the user (a
	// loaded machine gives the user's process little time: 8 removals in
	// 3000 tries were seen in CI), for 30 s at most.
	removed := 0
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; (i < 3000 || removed < 100) && time.Now().Before(deadline); i++ {
		for _, d := range cleanup.Orphans(root, logs, func(mark.Holder, string) bool { return false }) {
			if d.Removed {
				removed++
			}
		}
		if _, err := os.Stat(filepath.Join(victim, "precious")); err != nil {
			t.Fatalf("try %d: root removed the victim %s through the user's link (%v)", i, victim, err)
		}
	}
	t.Logf("%d removals of the user's own pod dir", removed)
	if removed < 10 {
		t.Errorf("only %d removals: the test did not race", removed)
	}
}

// TestHelperSwapper is TestOrphansRaceOtherUser's other user.
func TestHelperSwapper(t *testing.T) { rmtreetest.Helper(t) }

// TestOrphansHugeMarker: a 4 GiB sparse marker is not read (no out of
// memory): the dir is kept, and listed with why.
func TestOrphansHugeMarker(t *testing.T) {
	base := t.TempDir()
	root, logs := filepath.Join(base, "root"), filepath.Join(base, "logs")
	pod := filepath.Join(root, "pods", "u1")
	must(t, os.MkdirAll(pod, 0o750))
	f := filepath.Join(pod, mark.File)
	must(t, os.WriteFile(f, nil, 0o644))
	must(t, os.Truncate(f, 4<<30))
	got := cleanup.Orphans(root, logs, func(mark.Holder, string) bool { return false })
	if len(got) != 1 || got[0].Removed || !strings.Contains(got[0].Why, "larger than 65536 bytes") {
		t.Errorf("Orphans = %+v, want %s kept because its marker is too large", got, pod)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("%s removed: %v", pod, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
