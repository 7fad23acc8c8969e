//go:build linux

// Package rmtreetest plays another local user for tests of removals: a
// process of uid 65534 that keeps exchanging a directory with a symbolic
// link to a victim while root removes things near it.
package rmtreetest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Swapper starts this test binary as uid 65534 (setpriv), in dir (owned
// by that user), to keep exchanging dir/name with a symbolic link to
// target, and to keep making dir/keep (a file holding data, its dirs
// included) so that there is always something to remove. It stops when the test ends. The
// binary is copied into base (which must be reachable by uid 65534).
func Swapper(t *testing.T, base, dir, name, target, keep string, data []byte) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test plays root and another user (uid 65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	self, err := os.Executable()
	mustT(t, err)
	bin := filepath.Join(base, "swapper.test")
	in, err := os.Open(self)
	mustT(t, err)
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	mustT(t, err)
	_, err = io.Copy(out, in)
	in.Close()
	mustT(t, err)
	mustT(t, out.Close())
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^TestHelperSwapper$")
	cmd.Env = append(os.Environ(), "RMTREE_SWAPPER="+strings.Join([]string{dir, name, target, keep, string(data)}, "\n"))
	cmd.Stderr = os.Stderr
	mustT(t, cmd.Start())
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
		_ = cmd.Wait()
	})
	return cmd
}

// Helper is the swapping process's test: a package that calls Swapper
// has a TestHelperSwapper that calls Helper, and nothing else.
func Helper(t *testing.T) {
	arg := os.Getenv("RMTREE_SWAPPER")
	if arg == "" {
		t.Skip("the other user's process of a removal race test")
	}
	a := strings.Split(arg, "\n")
	dir, name, target, keep, data := a[0], a[1], a[2], a[3], []byte(a[4])
	swap, link := filepath.Join(dir, name), filepath.Join(dir, name+".link")
	_ = os.Symlink(target, link)
	for i := 0; ; i++ {
		if i%64 == 0 {
			if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
				return
			}
		}
		// Keep something there to remove: the real tree, made anew.
		if fi, err := os.Lstat(swap); err != nil || fi.IsDir() {
			if _, err := os.Lstat(filepath.Join(dir, keep)); err != nil {
				_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, keep)), 0o755)
				_ = os.WriteFile(filepath.Join(dir, keep), data, 0o644)
			}
		}
		_ = unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
	}
}

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
