package shadow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestMain runs this test binary as a stand-in runtime when it is called
// containerd or crio (a copy: /proc/PID/exe names the copy): --version
// prints containerd's line, else it listens on $SHADOW_TEST_SOCKET until killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		// StartInHost's helper (BenchmarkStartStopInHost)
		if err := Helper(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	switch filepath.Base(os.Args[0]) {
	case "podstep":
		// a podstep proxy: its socket bound under another name and renamed
		// into place (/proc/net/unix keeps the first name)
		sock := os.Getenv("SHADOW_TEST_SOCKET")
		l, err := net.Listen("unix", sock+".tmp")
		if err == nil {
			err = os.Rename(sock+".tmp", sock)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}
	case "containerd", "crio":
		if slices.Contains(os.Args, "--version") {
			fmt.Println("containerd github.com/containerd/containerd/v9 v9.8.7 0123abcd")
			os.Exit(0)
		}
		l, err := net.Listen("unix", os.Getenv("SHADOW_TEST_SOCKET"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}
	}
	os.Exit(m.Run())
}

// fakeRuntime starts a copy of this binary named name, with args, in dir,
// listening on a socket; it returns the socket and the process.
func fakeRuntime(t *testing.T, name string, dir string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"SHADOW_TEST_SOCKET=" + sock, "PATH=/opt/shims/bin:/usr/bin"}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stand-in runtime did not listen")
		}
	}
	return sock, cmd
}

func TestFind(t *testing.T) {
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "config.toml")
	if err := os.WriteFile(cfg, []byte("version = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		dir  string
	}{
		{"--config PATH", []string{"--config", cfg}, "/"},
		{"-c PATH", []string{"-c", cfg}, "/"},
		{"--config=PATH", []string{"--config=" + cfg}, "/"},
		{"a path relative to its working dir", []string{"--config", "config.toml"}, cfgDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock, cmd := fakeRuntime(t, "containerd", tt.dir, tt.args...)
			r, err := Find(context.Background(), "unix://"+sock)
			if err != nil {
				t.Fatal(err)
			}
			if r.PID != cmd.Process.Pid || filepath.Base(r.Exe) != "containerd" || r.Start == 0 {
				t.Errorf("pid %d exe %s start %d; want pid %d, the copy named containerd", r.PID, r.Exe, r.Start, cmd.Process.Pid)
			}
			if r.Config != cfg || string(r.ConfigData) != "version = 3\n" {
				t.Errorf("config %q (%q), want %q", r.Config, r.ConfigData, cfg)
			}
			if r.Version != "v9.8.7" || r.Major != 9 || r.Path != "/opt/shims/bin:/usr/bin" || r.Socket != sock {
				t.Errorf("version %q major %d path %q socket %q", r.Version, r.Major, r.Path, r.Socket)
			}
		})
	}
}

// A podstep proxy in front of the runtime (its socket renamed into place,
// found by SO_PEERCRED) is followed to its --upstream.
func TestFindFollowsProxy(t *testing.T) {
	up, ctrd := fakeRuntime(t, "containerd", "/")
	for _, args := range [][]string{{"proxy", "--listen", "x", "--upstream", "unix://" + up}, {"proxy", "--upstream=unix://" + up}} {
		sock, proxy := fakeRuntime(t, "podstep", "/", args...)
		r, err := Find(context.Background(), "unix://"+sock)
		if err != nil {
			t.Fatal(err)
		}
		if r.PID != ctrd.Process.Pid || r.Endpoint != "unix://"+up || r.Via != "unix://"+sock {
			t.Errorf("%q: pid %d endpoint %s via %s; want containerd's pid %d behind the proxy (pid %d)", args, r.PID, r.Endpoint, r.Via, ctrd.Process.Pid, proxy.Process.Pid)
		}
		if pid, err := ServingPID("unix://" + sock); err != nil || pid != proxy.Process.Pid {
			t.Errorf("ServingPID = %d, %v; want the proxy's %d", pid, err, proxy.Process.Pid)
		}
	}
}

func TestFindRefuses(t *testing.T) {
	t.Run("not containerd", func(t *testing.T) {
		sock, cmd := fakeRuntime(t, "crio", "/")
		_, err := Find(context.Background(), "unix://"+sock)
		var u *UnsupportedError
		if !errors.As(err, &u) || u.PID != cmd.Process.Pid || filepath.Base(u.Exe) != "crio" {
			t.Fatalf("err = %v, want an UnsupportedError naming crio and pid %d", err, cmd.Process.Pid)
		}
	})
	t.Run("a config that cannot be read", func(t *testing.T) {
		sock, _ := fakeRuntime(t, "containerd", "/", "--config", "/nonexistent/config.toml")
		if _, err := Find(context.Background(), "unix://"+sock); err == nil {
			t.Fatal("no error for a config given that does not exist")
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		if _, err := Find(context.Background(), "unix://"+filepath.Join(t.TempDir(), "none.sock")); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestSplitRule(t *testing.T) {
	got, err := splitRule(`POSTROUTING -s 10.234.0.2/32 -m comment --comment "name: \"podstep-shadow-1\" id: \"abc\"" -j CNI-123`)
	want := []string{"POSTROUTING", "-s", "10.234.0.2/32", "-m", "comment", "--comment", `name: "podstep-shadow-1" id: "abc"`, "-j", "CNI-123"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}
