//go:build integration

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// rowOf is the line of a frame that starts with prefix ("6 run-sandbox ").
func rowOf(frame, prefix string) string {
	for _, l := range strings.Split(frame, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestTUITimelineOnContainerd uses the timeline view (t) as a person
// would, in a real terminal (tmux, 120x45), on the harness containerd:
// before any step it says so; after c, while the pod runs, it shows a bar
// per step and per CRI call (run-sandbox's is the runtime's █, the
// relist's waits between its polls ░); t goes back to the panes. Then the recording
// of that run opens in `podstep replay`, and t shows the same rows there.
func TestTUITimelineOnContainerd(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	rec := filepath.Join(t.TempDir(), "hello.rec")
	tui := startTUI(t, "podstep-timeline-it", 120, 45, e.bin, "run", "-f", e.pod("hello"), "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", d.root, "--log-dir", d.logs, "--record", rec)
	tui.waitFor("the first screen", func(f string) bool { return strings.Contains(f, "1 admit") && strings.Contains(f, "t timeline") })
	tui.key("t")
	tui.waitFor("the empty timeline", func(f string) bool {
		return strings.Contains(f, "─ timeline ") && strings.Contains(f, "no step has run yet")
	})
	tui.key("c")
	bars := func(f string) bool {
		sandbox, call, relist := rowOf(f, "6 run-sandbox "), rowOf(f, "  RunPodSandbox "), rowOf(f, "11 relist ")
		return strings.Contains(f, "all steps done") && strings.Contains(sandbox, "█") && strings.Contains(call, "█") &&
			// Each poll is at least one cell wide, however short: on a loaded
			// machine (a wider scale) the polls can fill half the row.
			strings.Count(relist, "░") >= 3 && strings.Contains(f, "so far ")
	}
	live := tui.waitFor("the timeline with every step's bar", bars)
	t.Logf("the timeline:\n%s", live)
	for _, method := range []string{"Version", "RunPodSandbox", "PodSandboxStatus", "ImageStatus", "CreateContainer", "StartContainer", "ListContainers"} {
		if rowOf(live, "  "+method+" ") == "" {
			t.Errorf("no row for the %s call:\n%s", method, live)
		}
	}
	tui.key("t")
	tui.waitFor("the panes again", func(f string) bool { return strings.Contains(f, "plan 11/11") && !strings.Contains(f, "─ timeline ") })
	tui.quitWithTeardown()
	if c := dialCRI(t, e.endpoint); len(c.managedSandboxes(t)) != 0 {
		t.Errorf("sandboxes left after quitting the TUI with teardown")
	}

	replay := startTUI(t, "podstep-timeline-replay-it", 120, 45, e.bin, "replay", rec)
	replay.waitFor("the replay", func(f string) bool { return strings.Contains(f, "REPLAY 0/") })
	replay.key("c")
	replay.waitFor("the end of the recording", func(f string) bool { return strings.Contains(f, "end of the recording") })
	replay.key("t")
	end := replay.waitFor("the replay's timeline", func(f string) bool {
		return strings.Contains(f, "─ timeline ") && strings.Contains(rowOf(f, "15 remove-sandbox "), "█")
	})
	replay.key("Up")
	replay.key("Up")
	replay.key("Up")
	replay.key("PageUp")
	replay.key("PageUp")
	top := replay.waitFor("the replay's timeline scrolled to the top", func(f string) bool { return rowOf(f, "1 admit ") != "" })
	if top == end || !strings.Contains(rowOf(top, "6 run-sandbox "), "█") {
		t.Errorf("scrolled up: want the first rows with run-sandbox's bar:\n%s", top)
	}
	replay.key("q")
}
