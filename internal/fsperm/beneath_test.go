//go:build unix

package fsperm

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestListenUnix: under umask 000 the socket has its mode from the start
// (it was bound in a private dir, renamed in), replaces a stale socket,
// and leaves nothing else in the dir.
func TestListenUnix(t *testing.T) {
	dir, err := os.MkdirTemp("", "fsl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	p := filepath.Join(dir, "s.sock")
	for i := range 2 { // the second replaces the first's stale socket
		l, err := ListenUnix(p, 0o600, -1)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("run %d: socket %v (%v), want srw-------", i, fi.Mode(), err)
		}
		c, err := net.Dial("unix", p)
		if err != nil {
			t.Fatalf("run %d: dial: %v", i, err)
		}
		_ = c.Close()
		_ = l.Close() // leaves the socket file: SetUnlinkOnClose(false)
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("run %d: dir holds %v, want the socket alone", i, ents)
		}
	}
}

// TestOpenBeneath: files and dirs are made under root; a link anywhere on
// the way, or at the end, is refused and not followed, and a path that
// climbs out is refused.
func TestOpenBeneath(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("keep"), 0o644),
		os.Symlink(outside, filepath.Join(root, "dirlink")),
		os.Mkdir(filepath.Join(root, "d"), 0o755),
		os.Symlink(victim, filepath.Join(root, "d", "filelink")))
	f, err := OpenBeneath(root, "a/b/c.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if fi, err := os.Lstat(filepath.Join(root, "a", "b", "c.log")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a/b/c.log: %v %v", fi, err)
	}
	if err := MkdirBeneath(root, "x/y", 0o755); err != nil {
		t.Error(err)
	}
	if err := MkdirBeneath(root, ".", 0o755); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct{ rel, want string }{
		{"dirlink/new.log", "dirlink is a symbolic link"},
		{"dirlink/victim", "dirlink is a symbolic link"},
		{"d/filelink", "filelink is a symbolic link"},
		{"../x.log", "not a path inside"},
		{"/etc/x.log", "not a path inside"},
	} {
		f, err := OpenBeneath(root, tc.rel, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640, 0o755)
		if err == nil {
			_ = f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.rel, err, tc.want)
		}
	}
	if err := MkdirBeneath(root, "dirlink/sub", 0o755); err == nil {
		t.Error("MkdirBeneath went through a link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim written: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("made outside: %v", ents)
	}
	var ue *UnsafeError
	if _, err := OpenBeneath(root, "d/filelink", os.O_WRONLY, 0, 0o755); !errors.As(err, &ue) {
		t.Errorf("a link at the end: %v, want an UnsafeError", err)
	}
}
