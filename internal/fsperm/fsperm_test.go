//go:build unix

package fsperm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other users")
	}
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, owner int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, owner, -1); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o700, 0), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		groupOK bool
		want    string // "" ok, else part of the error
	}{
		{"own 0700", mk("own", 0o700, 0), false, ""},
		{"own 0755", mk("own755", 0o755, 0), false, ""},
		{"group writable", mk("g", 0o770, 0), false, "writable by its group"},
		{"group writable, group allowed", mk("g2", 0o770, 0), true, ""},
		{"world writable", mk("w", 0o777, 0), true, "writable by others"},
		{"sticky world writable", mk("sticky", os.ModeSticky|0o777, 0), false, "writable by group and others"},
		{"other user's", mk("other", 0o700, 4242), false, "owned by uid 4242"},
		{"symlink", link, false, "is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Private(tc.path, tc.groupOK)
			check(t, err, tc.want)
		})
	}
}

func TestTrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other users")
	}
	base := t.TempDir()
	open := filepath.Join(base, "open")
	must(t, os.Mkdir(open, 0o700), os.Chmod(open, 0o777))
	inOpen := filepath.Join(open, "d")
	must(t, os.Mkdir(inOpen, 0o700))
	tmpLike := filepath.Join(base, "tmp")
	must(t, os.Mkdir(tmpLike, 0o700), os.Chmod(tmpLike, os.ModeSticky|0o777))
	inTmp := filepath.Join(tmpLike, "d")
	must(t, os.Mkdir(inTmp, 0o700))
	theirs := filepath.Join(base, "theirs")
	must(t, os.Mkdir(theirs, 0o755), os.Lchown(theirs, 4242, -1))
	inTheirs := filepath.Join(theirs, "d")
	must(t, os.Mkdir(inTheirs, 0o700))
	theirLink := filepath.Join(tmpLike, "link")
	must(t, os.Symlink(inTmp, theirLink), os.Lchown(theirLink, 4242, -1))

	for _, tc := range []struct{ name, path, want string }{
		{"under a sticky world-writable dir", inTmp, ""},
		{"under a world-writable dir", inOpen, "and not sticky"},
		{"under another user's dir", inTheirs, "owned by uid 4242"},
		{"through another user's link", theirLink, "symbolic link owned by uid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, Trusted(tc.path), tc.want) })
	}
}

func TestMkdirAll(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other users")
	}
	base := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	d := filepath.Join(base, "a", "b", "c")
	if err := MkdirAll(d, 0o750, 4243); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), d} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o750 || fi.Sys().(*syscall.Stat_t).Gid != 4243 {
			t.Errorf("%s: mode %v gid %d, want 0750 gid 4243", p, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid)
		}
	}
	// A name planted as another user's link is refused, not followed.
	victim := filepath.Join(base, "victim")
	must(t, os.Mkdir(victim, 0o700))
	planted := filepath.Join(base, "planted")
	must(t, os.Symlink(victim, planted), os.Lchown(planted, 4242, -1))
	check(t, MkdirAll(filepath.Join(planted, "sock"), 0o700, -1), "symbolic link owned by uid 4242")
	if _, err := os.Lstat(filepath.Join(victim, "sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dir was made through the planted link: %v", err)
	}
	// Another user's directory where podstep would make its own.
	theirs := filepath.Join(base, "theirs")
	must(t, os.Mkdir(theirs, 0o777), os.Chmod(theirs, 0o777), os.Lchown(theirs, 4242, -1))
	check(t, MkdirAll(theirs, 0o700, -1), "owned by uid 4242")
}

func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an UnsafeError saying %q", err, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
