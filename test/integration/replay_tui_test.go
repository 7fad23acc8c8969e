//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestReplayTUIOnContainerd records a run of the init pod on the harness
// containerd, then opens `podstep replay FILE` in a real terminal (tmux,
// 120x50) as a user who is not root (nobody), with an empty environment
// and no network at all: the header says REPLAY and containerd, space
// steps forward, p and ← step back, g N goes to step N, c runs to the end,
// and q quits at once with exit 0.
func TestReplayTUIOnContainerd(t *testing.T) {
	e := setup(t)
	share, rec, r := e.recordInit(t)
	bin := nobodyBinary(t, share)
	n := len(r.steps)

	tui := startTUI(t, "podstep-replay-it", 120, 50, "cd", share, "&&", "env", "-i", "PATH=/usr/bin:/bin", "TERM=xterm-256color",
		"unshare", "--net", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "replay", rec)
	at := func(pos int, more ...string) string {
		t.Helper()
		return tui.waitFor("the replay at step "+itoa(pos), func(f string) bool {
			if !strings.Contains(f, "REPLAY "+itoa(pos)+"/"+itoa(n)+" ") {
				return false
			}
			for _, m := range more {
				if !strings.Contains(f, m) {
					return false
				}
			}
			return true
		})
	}
	first := at(0, "1 admit", "next: 1 admit")
	if head := strings.SplitN(first, "\n", 2)[0]; !strings.Contains(head, "REPLAY") || !strings.Contains(head, "containerd") || strings.Contains(head, "SIMULATED") {
		t.Errorf("header %q: want REPLAY and containerd, not SIMULATED", head)
	}
	for range 3 {
		tui.key("Space")
	}
	at(3, "─ step 3 ─", "next: 4 ")
	tui.key("p")
	tui.key("Left")
	at(1, "next: 2 ")
	for _, k := range []string{"g", "6", "Enter"} {
		tui.key(k)
	}
	six := at(6, "next: 7 ")
	if !strings.Contains(six, "RunPodSandbox") {
		t.Errorf("at step 6 (run-sandbox) the step pane lacks its RunPodSandbox call:\n%s", six)
	}
	tui.key("r")
	at(6, "retry is not available in a replay")
	tui.key("c")
	at(n, "end of the recording")
	tui.key("Left")
	at(n - 1)
	tui.key("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(tui.done); err == nil {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Errorf("podstep replay exited %s, want 0; screen:\n%s", code, tui.capture())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("podstep replay did not exit on q; screen:\n%s", tui.capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func itoa(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		i /= 10
		if i == 0 {
			return s
		}
	}
}
