package proxy

import (
	"net"
	"os"
	"os/exec"
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

// TestListenTCP: no TCP without AllowTCP, loopback included; then only
// loopback, unless AllowRemote.
func TestListenTCP(t *testing.T) {
	for _, tc := range []struct {
		ep          string
		tcp, remote bool
		err         string
	}{
		{"tcp://127.0.0.1:0", false, false, "needs --allow-tcp (the CRI has no authentication: anyone on this machine"},
		{"tcp://localhost:0", false, false, "needs --allow-tcp"},
		{"tcp://0.0.0.0:0", false, true, "needs --allow-tcp"},
		{"tcp://127.0.0.1:0", true, false, ""},
		{"tcp://localhost:0", true, false, ""},
		{"tcp://[::1]:0", true, false, ""},
		{"tcp://0.0.0.0:0", true, false, "0.0.0.0 is not a loopback address"},
		{"tcp://:0", true, false, "every address is not a loopback address"},
		{"tcp://[::]:0", true, false, ":: is not a loopback address"},
		{"tcp://example.com:0", true, false, "example.com is not a loopback address"},
		{"tcp://0.0.0.0:0", true, true, ""},
	} {
		l, err := ListenOptions{AllowTCP: tc.tcp, AllowRemote: tc.remote}.Listen(tc.ep)
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

// TestListenUnsafeDir: the socket's directory is refused, with nothing
// made or chmodded, when a parent is world-writable and not sticky, and
// when an unprivileged user (uid 65534, a real process) planted a link
// where podstep would make it: root's socket never lands in their dir.
func TestListenUnsafeDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attacker is a real unprivileged user (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	base := shortDir(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(base, "w")
	sticky := filepath.Join(base, "t")
	theirs := filepath.Join(base, "theirs")
	for _, d := range []struct {
		path string
		mode os.FileMode
		uid  int
	}{{world, 0o777, 0}, {sticky, os.ModeSticky | 0o777, 0}, {theirs, 0o755, 65534}} {
		if err := os.Mkdir(d.path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d.path, d.uid, d.uid); err != nil {
			t.Fatal(err)
		}
	}
	asNobody := func(args ...string) {
		t.Helper()
		out, err := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("as uid 65534: %v: %v %s", args, err, out)
		}
	}
	// The user's links, in the sticky dir (as /tmp) and in the open one.
	asNobody("ln", "-s", theirs, filepath.Join(sticky, "newdir"))
	asNobody("ln", "-s", theirs, filepath.Join(world, "linked"))

	for _, tc := range []struct{ name, sock, want string }{
		{"world-writable parent", filepath.Join(world, "newdir", "cri.sock"), world + " is writable by group and others and not sticky"},
		{"world-writable parent, existing", filepath.Join(world, "cri.sock"), world + " is writable by group and others"},
		{"planted link in a sticky dir", filepath.Join(sticky, "newdir", "cri.sock"), "is a symbolic link owned by uid 65534"},
		{"planted link in an open dir", filepath.Join(world, "linked", "cri.sock"), "symbolic link owned by uid 65534"},
		{"another user's dir", filepath.Join(theirs, "cri.sock"), "is owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen("unix://" + tc.sock)
			if err == nil {
				_ = l.Close()
				t.Fatalf("listened on %s", tc.sock)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	for _, d := range []string{world, theirs} {
		if ents, _ := os.ReadDir(d); (d == world && len(ents) != 1) || (d == theirs && len(ents) != 0) {
			t.Errorf("%s holds %v after the refusals", d, ents)
		}
	}
	if fi, _ := os.Lstat(world); fi.Mode().Perm() != 0o777 {
		t.Errorf("%s mode changed to %v", world, fi.Mode())
	}
}
