package proxy

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSocketMode: under umask 000 the socket is 0660 and the directories
// Listen made 0750; an existing directory keeps its mode; the socket is
// removed on Close.
func TestSocketMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	base := shortDir(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(base, "a", "b", "cri.sock")
	l, err := Listen("unix://" + p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Errorf("socket %s, want srw-rw----", fi.Mode())
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != DirMode {
			t.Errorf("dir %s: %v %v, want drwxr-x---", d, fi.Mode(), err)
		}
	}
	if fi, _ := os.Stat(base); fi.Mode().Perm() != 0o755 {
		t.Errorf("existing dir changed to %s", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "a", "b")); len(ents) != 1 {
		t.Errorf("dir holds %v, want the socket alone", ents)
	}
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = c.Close()
	if err := l.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
}

// TestSocketGroup: the group given is the socket's and the made dirs'.
func TestSocketGroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	const nogroup = 65534
	p := filepath.Join(shortDir(t), "g", "cri.sock")
	l, err := ListenOptions{Group: nogroup, GroupSet: true}.Listen("unix://" + p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	for _, f := range []string{p, filepath.Dir(p)} {
		fi, err := os.Lstat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Gid != nogroup || st.Uid != 0 {
			t.Errorf("%s owned by %d:%d, want 0:%d", f, st.Uid, st.Gid, nogroup)
		}
	}
}

// TestListenTCP: only loopback, unless AllowRemote.
func TestListenTCP(t *testing.T) {
	for _, tc := range []struct {
		ep     string
		remote bool
		err    string
	}{
		{"tcp://127.0.0.1:0", false, ""},
		{"tcp://localhost:0", false, ""},
		{"tcp://[::1]:0", false, ""},
		{"tcp://0.0.0.0:0", false, "0.0.0.0 is not a loopback address"},
		{"tcp://:0", false, "every address is not a loopback address"},
		{"tcp://[::]:0", false, ":: is not a loopback address"},
		{"tcp://example.com:0", false, "example.com is not a loopback address"},
		{"tcp://0.0.0.0:0", true, ""},
	} {
		l, err := ListenOptions{AllowRemote: tc.remote}.Listen(tc.ep)
		if err != nil && strings.Contains(err.Error(), "address family not supported") {
			continue // no IPv6 here
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s (remote %v): %v", tc.ep, tc.remote, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.ep, err, tc.err)
		}
		if l != nil {
			_ = l.Close()
		}
	}
}
