//go:build linux

package rmtree

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podstep/podstep/internal/rmtree/rmtreetest"
)

// modes runs f with openat2, and with the O_NOFOLLOW walk older kernels get.
func modes(t *testing.T, f func(t *testing.T)) {
	for _, m := range []struct {
		name string
		off  bool
	}{{"openat2", false}, {"walk", true}} {
		t.Run(m.name, func(t *testing.T) {
			old := noOpenat2.Load()
			noOpenat2.Store(m.off)
			t.Cleanup(func() { noOpenat2.Store(old) })
			f(t)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte("x"), 0o644))
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestRemoveAll: a tree goes whole; links in it go as links (what they
// point to stays); a missing name is no error.
func TestRemoveAll(t *testing.T) {
	modes(t, func(t *testing.T) {
		base := t.TempDir()
		outside := filepath.Join(base, "outside")
		write(t, filepath.Join(outside, "keep"))
		top := filepath.Join(base, "parent", "top")
		for _, f := range []string{"a", "d/b", "d/e/f/g", "d/e/h", "weird name\n"} {
			write(t, filepath.Join(top, f))
		}
		must(t, os.Symlink(outside, filepath.Join(top, "d", "link")))
		must(t, os.Symlink(filepath.Join(outside, "keep"), filepath.Join(top, "filelink")))
		must(t, unix.Mkfifo(filepath.Join(top, "fifo"), 0o600))
		must(t, os.Mkdir(filepath.Join(top, "ro"), 0o500))
		write(t, filepath.Join(top, "empty", ".x"))

		must(t, RemoveAll(top))
		if exists(top) {
			t.Errorf("%s still there", top)
		}
		if !exists(filepath.Join(outside, "keep")) {
			t.Errorf("a link's target was removed")
		}
		must(t, RemoveAll(top)) // gone: no error
		// A link as the thing to remove: the link goes, its target stays.
		must(t, os.Symlink(outside, top))
		must(t, RemoveAll(top))
		if exists(top) || !exists(filepath.Join(outside, "keep")) {
			t.Errorf("link %s: removed=%v, target kept=%v", top, !exists(top), exists(filepath.Join(outside, "keep")))
		}
	})
}

// TestOpenDirBeneath: OpenDir goes through no link, no "..", no absolute
// path; ReadFile reads no link, no non-regular file and nothing larger than
// its cap, however large the file says it is (a 4 GiB sparse file).
func TestOpenDirBeneath(t *testing.T) {
	modes(t, func(t *testing.T) {
		base := t.TempDir()
		write(t, filepath.Join(base, "outside", "f"))
		write(t, filepath.Join(base, "root", "a", "b", "f"))
		must(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(base, "root", "a", "link")))
		must(t, os.Symlink(filepath.Join(base, "root", "a", "b", "f"), filepath.Join(base, "root", "a", "flink")))
		big := filepath.Join(base, "root", "a", "big")
		must(t, os.WriteFile(big, nil, 0o644))
		must(t, os.Truncate(big, 4<<30))
		must(t, unix.Mkfifo(filepath.Join(base, "root", "a", "fifo"), 0o600))
		r, err := Open(filepath.Join(base, "root"))
		must(t, err)
		defer r.Close()
		for _, tc := range []struct{ rel, err string }{
			{"a/b", ""},
			{"a", ""},
			{"a/link", "symbolic link"},
			{"a/link/..", "not a path beneath"},
			{"../outside", "not a path beneath"},
			{"a/../../outside", "not a path beneath"},
			{filepath.Join(base, "outside"), "not a relative path"},
			{"a/b/f", "not a directory"},
		} {
			d, err := r.OpenDir(tc.rel)
			if d != nil {
				d.Close()
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("OpenDir(%q) = %v, want error %q", tc.rel, err, tc.err)
			}
		}
		for _, tc := range []struct{ rel, err string }{
			{"a/b/f", ""},
			{"a/flink", "is not a regular file: it or a directory on the way is a symbolic link"},
			{"a/link/f", "symbolic link"},
			{"a/big", "larger than 65536 bytes"},
			{"a/fifo", "not a regular file"},
			{"a", "not a regular file"},
		} {
			data, err := r.ReadFile(tc.rel, 64<<10)
			if tc.err == "" && (err != nil || string(data) != "x") || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("ReadFile(%q) = %q, %v, want error %q", tc.rel, data, err, tc.err)
			}
		}
		var tl *TooLargeError
		if _, err := r.ReadFile("a/big", 64<<10); !errors.As(err, &tl) {
			t.Errorf("ReadFile of the 4 GiB file: %v, want a *TooLargeError", err)
		}
	})
}

// TestRemoveStopsAtMounts: a mount point inside the tree is not entered:
// the removal fails and what the mount holds stays.
func TestRemoveStopsAtMounts(t *testing.T) {
	modes(t, func(t *testing.T) {
		base := t.TempDir()
		mnt := filepath.Join(base, "top", "m")
		must(t, os.MkdirAll(mnt, 0o755))
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, ""); err != nil {
			t.Skipf("cannot mount a tmpfs (needs root with CAP_SYS_ADMIN): %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
		write(t, filepath.Join(mnt, "precious"))
		err := RemoveAll(filepath.Join(base, "top"))
		if err == nil || !strings.Contains(err.Error(), "mount point") {
			t.Errorf("RemoveAll over a mount: %v, want a mount point error", err)
		}
		if !exists(filepath.Join(mnt, "precious")) {
			t.Errorf("removed a file on a mount below the tree")
		}
	})
}

// TestRemoveRace: while a tree is removed from a checked parent's handle,
// another process keeps exchanging a directory on the way, above the
// removed tree ("pods") or inside it ("sub"), with a symbolic link to a
// victim directory. The victim must survive every time. (os.RemoveAll on
// the path, as cleanup did, loses the victim within a few hundred tries:
// it resolves "pods" again.)
func TestRemoveRace(t *testing.T) {
	tries := 120
	if testing.Short() {
		tries = 40
	}
	for _, where := range []string{"pods", "pods/uid/sub"} {
		t.Run(strings.ReplaceAll(where, "/", "_"), func(t *testing.T) {
			modes(t, func(t *testing.T) {
				base := t.TempDir()
				victimParent := filepath.Join(base, "victim")
				victim := filepath.Join(victimParent, "uid")
				root := filepath.Join(base, "root")
				for i := 0; i < tries; i++ {
					for _, f := range []string{"uid/f", "uid/sub/f", "sub/f"} {
						write(t, filepath.Join(victimParent, f))
					}
					for _, f := range []string{"a", "b", "sub/c", "sub/d/e"} {
						write(t, filepath.Join(root, "pods", "uid", f))
					}
					swap := filepath.Join(root, where)
					link := swap + ".link"
					target := victimParent
					if where != "pods" {
						target = victim
					}
					must(t, os.Symlink(target, link))
					stop := make(chan struct{})
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							_ = unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
						}
					}()
					r, err := Open(root)
					must(t, err)
					if pods, err := r.OpenDir("pods"); err == nil {
						_ = pods.RemoveAll("uid")
						pods.Close()
					}
					r.Close()
					close(stop)
					wg.Wait()
					for _, f := range []string{"uid/f", "uid/sub/f", "sub/f"} {
						if !exists(filepath.Join(victimParent, f)) {
							t.Fatalf("try %d: the victim's %s was removed", i, f)
						}
					}
					must(t, os.RemoveAll(root))
				}
			})
		})
	}
}

// TestRemoveRaceOtherUser: as TestRemoveRace, the swapping done by a real
// unprivileged user (uid 65534, setpriv) who owns the tree, with a
// root-owned victim.
func TestRemoveRaceOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test plays root removing a tree another user owns")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	base, err := os.MkdirTemp("", "rmtree-race")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	victim := filepath.Join(base, "victim", "uid")
	write(t, filepath.Join(victim, "precious"))
	root := filepath.Join(base, "root")
	must(t, os.Mkdir(root, 0o755))
	must(t, os.Chown(root, 65534, 65534))
	// The user's loop: keep pods/uid made, and exchange pods with a link
	// to the victim's parent as fast as it can (this test binary, as uid
	// 65534: TestHelperSwapper).
	rmtreetest.Swapper(t, base, root, "pods", filepath.Dir(victim), "pods/uid/f", []byte("x"))
	removed := 0
	deadline := time.Now().Add(10 * time.Second)
	for !exists(filepath.Join(root, "pods", "uid", "f")) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// At least 3000 tries, and on until 100 removals began (a loaded
	// machine gives the user's process little time), for 30 s at most.
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; (i < 3000 || removed < 100) && time.Now().Before(deadline); i++ {
		r, err := Open(root)
		must(t, err)
		if pods, err := r.OpenDir("pods"); err == nil {
			removed++ // reached the removal (which may fail: the user keeps making pods/uid/f)
			_ = pods.RemoveAll("uid")
			pods.Close()
		}
		r.Close()
		if !exists(filepath.Join(victim, "precious")) {
			t.Fatalf("try %d: root removed the victim %s through the user's link", i, victim)
		}
	}
	if removed < 10 {
		t.Errorf("%d removals began: the test did not race", removed)
	}
}

// TestHelperSwapper is the other user's process of TestRemoveRaceOtherUser
// (run by Swapper, not as a test).
func TestHelperSwapper(t *testing.T) {
	rmtreetest.Helper(t)
}
