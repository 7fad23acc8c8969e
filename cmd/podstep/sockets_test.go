package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/sim"
)

// nobody runs args as uid/gid 65534, a real unprivileged user: the local
// attacker of docs/security.md. It skips t unless podstep's tests run as
// root with setpriv, and makes bin's dir reachable to that user.
func nobody(t *testing.T) func(args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attacker is another, unprivileged user (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		return exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
	}
}

// TestSimServeSocketPrivate: `podstep sim-serve DIR` run by root under
// umask 000, in a DIR others may enter (0755), makes its socket 0600 from
// the start: uid 65534 cannot connect (podstep info as that user is exit
// 3, permission denied), root can.
func TestSimServeSocketPrivate(t *testing.T) {
	as := nobody(t)
	dir, err := os.MkdirTemp("", "pss")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `umask 000; exec "$@"`, "sh", bin, "sim-serve", "--until-stdin-closes", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	endpoint, err := sim.FirstLine(stdout, 10*time.Second)
	if err != nil {
		t.Fatalf("sim-serve: %v", err)
	}
	fi, err := os.Lstat(filepath.Join(dir, sim.SocketName))
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v (%v) under umask 000, want srw-------", fi.Mode(), err)
	}
	var out bytes.Buffer
	c := as(bin, "info", "-r", endpoint)
	c.Stdout, c.Stderr = &out, &out
	err = c.Run()
	if code := c.ProcessState.ExitCode(); code != ExitRuntime || !strings.Contains(out.String(), "permission denied") {
		t.Errorf("uid 65534 ran podstep info on root's simulator: exit %d (%v), want %d and permission denied:\n%s", code, err, ExitRuntime, out.String())
	}
	if code, out, errOut := run(t, "info", "-r", endpoint); code != ExitOK {
		t.Errorf("root: podstep info exit %d: %s%s", code, out, errOut)
	}
}

// TestProxyTCPNeedsFlag: a tcp:// --listen is exit 2 without --allow-tcp,
// naming the flag and the risk, loopback included (TestProxyBadInput has
// the table); with it the proxy listens and warns on stderr who can use it.
func TestProxyTCPNeedsFlag(t *testing.T) {
	_, upstream := simAndDir(t, "ptcp")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ep := "tcp://" + addr
	// The binary, under a deadline: a proxy that accepts the endpoint serves
	// until killed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errOut bytes.Buffer
	refused := exec.CommandContext(ctx, bin, "proxy", "--auto", "--listen", ep, "--upstream", upstream)
	refused.Stderr = &errOut
	_ = refused.Run() // its exit code is checked next
	if code := refused.ProcessState.ExitCode(); code != ExitUsage || !strings.Contains(errOut.String(), "needs --allow-tcp") || !strings.Contains(errOut.String(), "can run containers as root") {
		t.Errorf("without --allow-tcp: exit %d, %q; want 2 naming --allow-tcp and the risk", code, errOut.String())
	}
	px := exec.Command(bin, "proxy", "--auto", "--listen", ep, "--upstream", upstream, "--allow-tcp")
	stderr, _ := px.StderrPipe()
	if err := px.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = px.Process.Signal(os.Interrupt); _ = px.Wait() }()
	warned := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "warning") {
				warned <- sc.Text()
			}
		}
	}()
	select {
	case w := <-warned:
		want := fmt.Sprintf("podstep: warning: --allow-tcp: the CRI at %s has no authentication; anyone on this machine who can reach it can run containers as root", ep)
		if !strings.Contains(w, want) {
			t.Errorf("warning %q, want %q", w, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no warning on stderr within 10 s")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("--allow-tcp: nothing listens on %s: %v", addr, err)
	}
	_ = c.Close()
}

// TestProxyUnsafeSocketDir: root's proxy refuses (exit 2, nothing made)
// a socket whose new dir would be made in a world-writable, not sticky
// dir, and one whose dir is a link uid 65534 planted (a real process):
// root's socket never lands in that user's dir, where they could replace
// it with their own.
func TestProxyUnsafeSocketDir(t *testing.T) {
	as := nobody(t)
	base, upstream := simAndDir(t, "pud")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(base, "w")
	tmpLike := filepath.Join(base, "t")
	theirs := filepath.Join(tmpLike, "theirs")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{world, 0o777}, {tmpLike, os.ModeSticky | 0o777}} {
		if err := os.Mkdir(d.path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"mkdir", theirs}, {"ln", "-s", theirs, filepath.Join(tmpLike, "newdir")}} {
		if b, err := as(args...).CombinedOutput(); err != nil {
			t.Fatalf("as uid 65534: %v: %v %s", args, err, b)
		}
	}
	for _, tc := range []struct{ name, sock, want string }{
		{"world-writable parent", filepath.Join(world, "newdir", "cri.sock"), world + " is writable by group and others and not sticky"},
		{"planted link", filepath.Join(tmpLike, "newdir", "cri.sock"), filepath.Join(tmpLike, "newdir") + " is a symbolic link owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var errOut bytes.Buffer
			px := exec.CommandContext(ctx, bin, "proxy", "--auto", "--listen", "unix://"+tc.sock, "--upstream", upstream)
			px.Stderr = &errOut
			_ = px.Run() // its exit code is checked next
			if code := px.ProcessState.ExitCode(); code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errOut.String(), tc.want)
			}
		})
	}
	for _, d := range []string{world, theirs} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("made in %s: %v", d, ents)
		}
	}
}
