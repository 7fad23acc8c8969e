package proxy

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podstep/podstep/internal/mark"
)

// driverSocket listens on a unix socket in a private temp dir, as a CSI
// driver does, until the test ends; it returns the socket's path.
func driverSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tk") // 0700, short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("driver"))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return p
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// answer is what the socket at p says first ("driver", or "" for the proxy).
func answer(t *testing.T, p string) string {
	t.Helper()
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatalf("dial %s: %v", p, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.(*net.UnixConn).CloseWrite()
	b := make([]byte, 16)
	n, _ := c.Read(b)
	return string(b[:n])
}

// TestTakeOver: the proxy's socket replaces the driver's at its path, the
// driver answers at MovedPath, and Restore puts the driver's socket back
// (the same inode) and removes the marker; after a simulated kill (the
// proxy's socket left, no Restore), the marker alone puts it back; when
// the driver made a new socket meanwhile, that one is kept.
func TestTakeOver(t *testing.T) {
	for _, tc := range []string{"exit", "killed", "driver restarted"} {
		t.Run(tc, func(t *testing.T) {
			markers := t.TempDir()
			p := driverSocket(t)
			orig := ino(t, p)
			tk, err := TakeOver("d", p, markers)
			if err != nil {
				t.Fatal(err)
			}
			if ino(t, p) == orig || ino(t, MovedPath(p)) != orig {
				t.Fatalf("not taken over: %s %d, %s %d (driver %d)", p, ino(t, p), MovedPath(p), ino(t, MovedPath(p)), orig)
			}
			if got := answer(t, MovedPath(p)); got != "driver" {
				t.Errorf("the moved socket answers %q, want the driver", got)
			}
			ms, err := Markers(markers)
			if err != nil || len(ms) != 1 || ms[0].Socket != p || ms[0].Moved != MovedPath(p) || ms[0].Holder.PID != os.Getpid() {
				t.Fatalf("markers %+v, %v", ms, err)
			}
			newer := uint64(0)
			switch tc {
			case "exit":
				if err := tk.Restore(); err != nil {
					t.Fatal(err)
				}
			case "killed":
				_ = tk.Listener.Close() // the kernel closes it: the file stays
				if err := ms[0].Restore(); err != nil {
					t.Fatal(err)
				}
			case "driver restarted":
				_ = tk.Listener.Close()
				_ = os.Remove(p)
				l, err := net.Listen("unix", p)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = l.Close() }()
				newer = ino(t, p)
				if err := ms[0].Restore(); err != nil {
					t.Fatal(err)
				}
			}
			want := orig
			if newer != 0 {
				want = newer
			}
			if got := ino(t, p); got != want {
				t.Errorf("%s is inode %d, want %d", p, got, want)
			}
			if newer == 0 {
				if got := answer(t, p); got != "driver" {
					t.Errorf("the socket answers %q after restore, want the driver", got)
				}
			}
			if _, err := os.Lstat(MovedPath(p)); err == nil {
				t.Errorf("%s left", MovedPath(p))
			}
			if ms, _ := Markers(markers); len(ms) != 0 {
				t.Errorf("markers left: %+v", ms)
			}
		})
	}
}

// TestTakeOverRefuses: a socket podstep must not forward the kubelet's
// secrets to, or one already taken over, is refused with why, and nothing
// is changed.
func TestTakeOverRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown to another user")
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, p, markers string)
		want  string
	}{
		{"dir writable by others", func(t *testing.T, p, _ string) { must(t, os.Chmod(filepath.Dir(p), 0o777)) }, "is writable by others"},
		{"dir of another user", func(t *testing.T, p, _ string) { must(t, os.Chown(filepath.Dir(p), 65534, 65534)) }, "is owned by uid 65534"},
		{"socket of another user", func(t *testing.T, p, _ string) { must(t, os.Lchown(p, 65534, 65534)) }, "owned by uid 65534, neither root nor podstep's user"},
		{"not a socket", func(t *testing.T, p, _ string) { must(t, os.Remove(p)); must(t, os.WriteFile(p, nil, 0o600)) }, "is not a socket"},
		{"nothing answers", func(t *testing.T, p, _ string) {
			must(t, os.Remove(p))
			l, err := net.Listen("unix", p)
			must(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			must(t, l.Close())
		}, "does not answer"},
		{"a proxy stands there", func(t *testing.T, p, markers string) { writeMarker(t, markers, p, mark.Self("", false)) }, "already stands in front of it"},
		{"a killed proxy's marker", func(t *testing.T, p, markers string) { writeMarker(t, markers, p, mark.Holder{PID: 1 << 30}) }, "run podstep cleanup first"},
		{"moved name taken", func(t *testing.T, p, _ string) { must(t, os.WriteFile(MovedPath(p), nil, 0o600)) }, "exists and no marker says whose it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markers := t.TempDir()
			p := driverSocket(t)
			tc.setup(t, p, markers)
			before := ino(t, p)
			tk, err := TakeOver("d", p, markers)
			if err == nil {
				_ = tk.Restore()
				t.Fatalf("taken over; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if ino(t, p) != before {
				t.Errorf("%s changed", p)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeMarker(t *testing.T, dir, p string, h mark.Holder) {
	t.Helper()
	b, err := json.Marshal(Marker{Driver: "d", Socket: p, Moved: MovedPath(p), Holder: h})
	must(t, err)
	must(t, os.WriteFile(markerFile(dir, p), b, 0o600))
}
