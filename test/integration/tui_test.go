//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTUIRunsPodOnContainerd drives the interactive TUI as a person would:
// the podstep binary in a real terminal (tmux, 100x30), `c` to continue to
// the end against the harness containerd, then `q` and Enter (tear down).
// The final frame must show the pod Running, and nothing may be left.
func TestTUIRunsPodOnContainerd(t *testing.T) {
	e := setup(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed to drive the TUI in a terminal (hack/test.sh installs it): %v", err)
	}
	d := newDirs(t)
	session := "podstep-tui-it"
	exec.Command(tmux, "kill-session", "-t", session).Run()
	done := filepath.Join(t.TempDir(), "exit-code")
	cmdline := strings.Join([]string{e.bin, "run", "-f", e.pod("hello"), "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", d.root, "--log-dir", d.logs}, " ") + "; echo $? > " + done + "; sleep 60"
	if out, err := exec.Command(tmux, "new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmdline).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer exec.Command(tmux, "kill-session", "-t", session).Run()
	capture := func() string {
		out, _ := exec.Command(tmux, "capture-pane", "-p", "-t", session).Output()
		return string(out)
	}
	waitFor := func(what string, ok func(string) bool) string {
		deadline := time.Now().Add(30 * time.Second)
		for {
			f := capture()
			if ok(f) {
				return f
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen:\n%s", what, f)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the first screen", func(f string) bool { return strings.Contains(f, "1 admit") && !strings.Contains(f, "SIMULATED") })
	exec.Command(tmux, "send-keys", "-t", session, "c").Run()
	final := waitFor("the pod to run", func(f string) bool {
		// admit … start/hello, then the relist step.
		return strings.Contains(f, "plan 11/11") && strings.Contains(f, "Running")
	})
	for _, want := range []string{"hello", "1/1", "Running", "Started"} {
		if !strings.Contains(final, want) {
			t.Errorf("final frame lacks %q:\n%s", want, final)
		}
	}
	exec.Command(tmux, "send-keys", "-t", session, "q").Run()
	waitFor("the teardown prompt", func(f string) bool { return strings.Contains(f, "tear the pod down?") })
	exec.Command(tmux, "send-keys", "-t", session, "Enter").Run()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(done); err == nil {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Errorf("podstep exited %s, want 0; screen:\n%s", code, capture())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("podstep did not exit after q, Enter; screen:\n%s", capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c := dialCRI(t, e.endpoint); len(c.managedSandboxes(t)) != 0 {
		t.Errorf("sandboxes left after quitting the TUI with teardown")
	}
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
	assertEmptyDir(t, "log dirs", d.logs)
}
