package session

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSimBase: a run on the simulated runtime keeps its dir in $TMPDIR when
// the user set it, else on a memory file system ($XDG_RUNTIME_DIR when it
// is a private tmpfs, else /dev/shm), else the temp dir: on a disk, a
// 1,000-container pod's files cost more than the rest of the run (issue 34).
func TestSimBase(t *testing.T) {
	shm := onTmpfs("/dev/shm")
	tmp := t.TempDir()
	t.Run("TMPDIR wins", func(t *testing.T) {
		t.Setenv("TMPDIR", tmp)
		if got := SimBase(); got != tmp {
			t.Errorf("SimBase() = %q, want $TMPDIR %q", got, tmp)
		}
	})
	t.Run("not a tmpfs XDG_RUNTIME_DIR", func(t *testing.T) {
		t.Setenv("TMPDIR", "")
		t.Setenv("XDG_RUNTIME_DIR", tmp)
		want := "/tmp"
		if shm {
			want = "/dev/shm"
		}
		if onTmpfs(tmp) {
			t.Skip("the temp dir is a tmpfs here")
		}
		if got := SimBase(); got != want {
			t.Errorf("SimBase() = %q, want %q", got, want)
		}
		if got := SimBases(); got[0] != want || (want != "/tmp" && (len(got) != 2 || got[1] != "/tmp")) {
			t.Errorf("SimBases() = %q, want %q then the temp dir", got, want)
		}
	})
	t.Run("a private tmpfs XDG_RUNTIME_DIR", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a tmpfs needs root")
		}
		run := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(run, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", run, "tmpfs", 0, "mode=0700"); err != nil {
			t.Skipf("mount tmpfs: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(run, unix.MNT_DETACH) })
		t.Setenv("TMPDIR", "")
		t.Setenv("XDG_RUNTIME_DIR", run)
		if got := SimBase(); got != run {
			t.Errorf("SimBase() = %q, want the tmpfs $XDG_RUNTIME_DIR %q", got, run)
		}
		if err := os.Chmod(run, 0o777); err != nil {
			t.Fatal(err)
		}
		if got := SimBase(); got == run {
			t.Errorf("SimBase() = %q: an $XDG_RUNTIME_DIR others can write is not the user's own", got)
		}
	})
}
