package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTUIDetectsColoursOnce: the TUI reuses the colour profile lipgloss's
// init detected for stdout instead of detecting it again. Inside tmux each
// detection execs `tmux info` (3-9 ms, issue 14); a fake tmux on PATH
// counts them while podstep's TUI starts on a pty, in a TMUX environment.
func TestTUIDetectsColoursOnce(t *testing.T) {
	root, logs := dirs(t)
	dir := t.TempDir()
	calls := dir + "/tmux-calls"
	if err := os.WriteFile(dir+"/tmux", []byte("#!/bin/sh\necho \"$*\" >>"+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ptm, pts := openPTY(t)
	defer ptm.Close()
	if err := unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatalf("set pty size: %v", err)
	}
	cmd := exec.Command(bin, "run", "--sim", "-f", "../../testdata/pods/hello.yaml", "--grace-period", "0", "--root-dir", root, "--log-dir", logs)
	cmd.Env = append(envWithout("TMUX", "TERM", "PATH", "NO_COLOR"),
		"TMUX=/nonexistent/podstep-test,1,0", "TERM=xterm-256color", "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.Stdin, cmd.Stdout = pts, pts
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	// The first frame ends with the footer's "quit"; then ctrl+c ends the
	// TUI (and tears the pod down).
	frame := make(chan bool, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte("quit")) {
				frame <- true
				_, _ = io.Copy(io.Discard, ptm) // drain until the child closes the terminal; ends with EIO
				return
			}
			if err != nil {
				frame <- false
				return
			}
		}
	}()
	if !<-frame {
		_ = cmd.Wait() // the test fails either way
		t.Fatalf("no first TUI frame; stderr:\n%s", stderr.String())
	}
	if _, err := ptm.Write([]byte{3}); err != nil {
		t.Fatalf("ctrl+c to the terminal: %v", err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != ExitInterrupted) {
		t.Fatalf("podstep after ctrl+c: %v, want exit 0 or %d; stderr:\n%s", err, ExitInterrupted, stderr.String())
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("tmux never called: the TMUX environment no longer leads to colour detection? %v", err)
	}
	if got := strings.Split(strings.TrimSpace(string(b)), "\n"); len(got) != 1 {
		t.Errorf("tmux called %d times (%q), want once (lipgloss's init)", len(got), got)
	}
	assertEmpty(t, root+"/pods")
	assertEmpty(t, logs)
}
