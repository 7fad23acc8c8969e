package main

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/sim"
)

// startSim starts the simulated runtime as bench does (sim.StartProcess:
// `exe sim-serve --until-stdin-closes`, a process of its own) and returns
// it; Stop it when done. The tests' requests name log dirs in their temp
// dirs: it lets them (--allow-dir TMPDIR).
func startSim(tb testing.TB, exe string) *sim.Process {
	tb.Helper()
	up, err := sim.StartProcess(exe, os.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return up
}

// simAndDir is the proxy tests' start: a temporary dir with a short path
// (a unix socket's path has at most 107 bytes; t.TempDir's can be longer)
// and the simulated runtime's endpoint; both go when t ends.
func simAndDir(t *testing.T, prefix string) (dir, upstream string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	up := startSim(t, bin)
	t.Cleanup(up.Stop)
	return dir, up.Endpoint
}

// startProxy is the one start-the-proxy block of the proxy tests: it runs
// `exe proxy --auto --listen unix://SOCK --upstream UPSTREAM ARGS...` with
// its stdout and stderr to out (nil: discarded) and waits up to 10 s for
// SOCK. stop sends SIGINT and waits for the proxy (its exit is not
// checked; a caller that checks it waits itself).
func startProxy(tb testing.TB, exe, sock, upstream string, out io.Writer, args ...string) (px *exec.Cmd, stop func()) {
	tb.Helper()
	px = exec.Command(exe, append([]string{"proxy", "--auto", "--listen", "unix://" + sock, "--upstream", upstream}, args...)...)
	px.Stdout, px.Stderr = out, out
	if err := px.Start(); err != nil {
		tb.Fatal(err)
	}
	stop = func() { _ = px.Process.Signal(os.Interrupt); _ = px.Wait() }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return px, stop
		}
		if time.Now().After(deadline) {
			stop()
			tb.Fatalf("the proxy did not listen on %s within 10 s: %v", sock, out)
		}
	}
}
