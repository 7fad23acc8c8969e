//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTUIRunsPodOnContainerd drives the interactive TUI as a person would:
// the podstep binary in a real terminal (tmux, 100x30), `c` to continue to
// the end against the harness containerd, then `q`, `c` (the teardown in the
// TUI) and `q`.
// The final frame must show the pod Running, and nothing may be left.
func TestTUIRunsPodOnContainerd(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	tui := startTUI(t, "podstep-tui-it", 100, 30, e.bin, "run", "-f", e.pod("hello"), "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", d.root, "--log-dir", d.logs)
	tui.waitFor("the first screen", func(f string) bool { return strings.Contains(f, "1 admit") && !strings.Contains(f, "SIMULATED") })
	tui.key("c")
	final := tui.waitFor("the pod to run", func(f string) bool {
		// admit … start/hello, then the relist step.
		return strings.Contains(f, "plan 11/11") && strings.Contains(f, "Running")
	})
	for _, want := range []string{"hello", "1/1", "Running", "Started"} {
		if !strings.Contains(final, want) {
			t.Errorf("final frame lacks %q:\n%s", want, final)
		}
	}
	// The step pane says in words what the selected step changed: start/hello, one up.
	tui.key("Up")
	tui.waitFor("start/hello's changes in words", func(f string) bool {
		return strings.Contains(f, "[start/hello]") && strings.Contains(f, "pod: STATUS ContainerCreating → Running")
	})
	tui.quitWithTeardown()
	if c := dialCRI(t, e.endpoint); len(c.managedSandboxes(t)) != 0 {
		t.Errorf("sandboxes left after quitting the TUI with teardown")
	}
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
	assertEmptyDir(t, "log dirs", d.logs)
}

// tuiSession is podstep running in a real terminal: a detached tmux session.
type tuiSession struct {
	t       *testing.T
	tmux    string
	session string
	done    string // where the shell writes podstep's exit code
	// frames are every screen waitFor returned, and those captured by the test.
	frames []string
}

// startTUI runs the command line args in a new tmux session of cols x rows;
// the session is killed when the test ends.
func startTUI(t *testing.T, session string, cols, rows int, args ...string) *tuiSession {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed to drive the TUI in a terminal (hack/test.sh installs it): %v", err)
	}
	// One tmux server serves every suite on the machine (two runtimes' suites, a developer's
	// beside CI's): the pid keeps this process's session names its own.
	session = fmt.Sprintf("%s-%d", session, os.Getpid())
	s := &tuiSession{t: t, tmux: tmux, session: session, done: filepath.Join(t.TempDir(), "exit-code")}
	_ = exec.Command(tmux, "kill-session", "-t", session).Run() // a leftover session of that name, if any (fails when there is none)
	// The code is written beside and renamed: a reader never sees the
	// file made but still empty (a replay's q once read "" there).
	cmdline := strings.Join(args, " ") + "; echo $? > " + s.done + ".new; mv " + s.done + ".new " + s.done + "; sleep 60"
	if out, err := exec.Command(tmux, "new-session", "-d", "-s", session, "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), cmdline).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(tmux, "kill-session", "-t", session).CombinedOutput(); err != nil {
			t.Logf("tmux kill-session %s: %v: %s", session, err, out)
		}
	})
	return s
}

// capture returns the screen now.
func (s *tuiSession) capture() string {
	out, _ := exec.Command(s.tmux, "capture-pane", "-p", "-t", s.session).Output()
	return string(out)
}

// key types one key (tmux send-keys names: "n", "Tab", "Enter").
func (s *tuiSession) key(k string) {
	s.t.Helper()
	if out, err := exec.Command(s.tmux, "send-keys", "-t", s.session, k).CombinedOutput(); err != nil {
		s.t.Errorf("tmux send-keys %s: %v: %s", k, err, out)
	}
}

// waitFor polls the screen until ok accepts it (30 s at most) and returns it.
func (s *tuiSession) waitFor(what string, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f := s.capture()
		if ok(f) {
			s.frames = append(s.frames, f)
			return f
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; screen:\n%s", what, f)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quitWithTeardown quits with q, answers the teardown prompt with c (the
// teardown's steps all at once, in the TUI), quits with q once torn down,
// and checks podstep exits 0.
func (s *tuiSession) quitWithTeardown() {
	s.t.Helper()
	s.key("q")
	s.waitFor("the teardown prompt", func(f string) bool { return strings.Contains(f, "tear down now?") })
	s.key("c")
	s.waitFor("the teardown's end", func(f string) bool { return strings.Contains(f, "torn down") })
	s.key("q")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(s.done); err == nil {
			if code := strings.TrimSpace(string(b)); code != "0" {
				s.t.Errorf("podstep exited %s, want 0; screen:\n%s", code, s.capture())
			}
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("podstep did not exit after q, c, q; screen:\n%s", s.capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.frames = append(s.frames, s.capture())
}
