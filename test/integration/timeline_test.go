//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimelinePageInChromium records a crash loop on the harness
// containerd, writes its timeline page with replay --html, and loads the
// page in a real browser (Debian's chromium, headless; hack/test.sh
// installs it). The assertions are on the DOM chromium rendered: one bar
// per step, the failed steps' bars marked, the failure named, the calls'
// requests collapsible. It also takes a screenshot for a person to look at
// ($TMPDIR/podstep-timeline.png, logged).
func TestTimelinePageInChromium(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (hack/test.sh installs it: apt-get install -y chromium)")
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "crashloop.rec.gz")
	r := e.run(t, d, filepath.Join(e.repo, "internal", "scenario", "data", "crashloop.yaml"),
		// --settle 10s: the relist ends at the container's exit; its default 1 s was too short
		// on a loaded machine (`exit 2` still running after it: the run ended 0, load 27).
		"--max-restarts", "2", "--backoff-scale", "0.001", "--settle", "10s", "--record", rec)
	if r.code != 1 || r.summary.Failure == nil {
		t.Fatalf("the crash loop: exit %d, want 1 with a failure\n%s", r.code, r)
	}
	e.assertNothingLeft(t, d, "default", "crashloop", r.summary.UID)
	steps, failed := 0, 0
	for _, s := range r.steps {
		steps++
		if s.State == "failed" {
			failed++
		}
	}

	page := filepath.Join(dir, "crashloop.html")
	h := e.podstep(t, "replay", rec, "--html", page)
	if h.code != 0 {
		t.Fatalf("replay --html: exit %d\n%s", h.code, h)
	}
	if h.stdout != "" {
		t.Errorf("replay --html printed to stdout: %q", h.stdout)
	}

	dom := browse(t, chromium, page, "--dump-dom")
	bars := regexp.MustCompile(`<div class="bar step st-[a-z-]+( wait)?( failed)?" data-step="(\d+)" data-state="([a-z]+)"`).FindAllStringSubmatch(dom, -1)
	if len(bars) != steps || steps < 15 {
		t.Fatalf("the rendered page has %d step bars; the run had %d steps", len(bars), steps)
	}
	marked := 0
	for i, b := range bars {
		want := r.steps[i]
		if b[3] != strconv.Itoa(want.ID) || b[4] != want.State {
			t.Errorf("bar %d is step %s (%s); the run's step %d is %s", i, b[3], b[4], want.ID, want.State)
		}
		if (b[2] != "") != (want.State == "failed") {
			t.Errorf("step %d (%s): failure mark %q", want.ID, want.State, b[2])
		}
		if b[2] != "" {
			marked++
		}
	}
	if marked != failed || failed < 2 {
		t.Errorf("%d bars marked failed; the run had %d failed steps (want ≥ 2: each crash)", marked, failed)
	}
	if n := strings.Count(dom, `class="mark failed-mark"`); n != failed {
		t.Errorf("%d ✗ marks, want %d", n, failed)
	}
	if !strings.Contains(dom, `id="failure"`) || !strings.Contains(dom, "CrashLoopBackOff") {
		t.Errorf("the page does not name the failure (CrashLoopBackOff)")
	}
	if !strings.Contains(dom, `<details class="call"><summary><code>CreateContainer</code> OK`) {
		t.Errorf("the page has no collapsible CreateContainer call")
	}
	if !strings.Contains(dom, "containerd") || !strings.Contains(dom, "GenericPLEG.Relist") {
		t.Errorf("the page lacks the runtime (containerd) or the relist's kubelet function")
	}

	// The screenshot stays after the test, for a person to look at.
	shot := filepath.Join(os.TempDir(), "podstep-timeline.png")
	browse(t, chromium, page, "--screenshot="+shot, "--window-size=1400,1000")
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 20_000 {
		t.Fatalf("no screenshot of the page (%v, %v)", st, err)
	}
	t.Logf("page %d bytes, screenshot %s (%d bytes)", fileSize(t, page), shot, st.Size())
}

// browse runs headless chromium on the page file with one action
// (--dump-dom, --screenshot=...) and returns its stdout.
func browse(t *testing.T, chromium, page string, action ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}, action...)
	cmd := exec.CommandContext(ctx, chromium, append(args, "file://"+page)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // its org.chromium.Chromium.* dirs go with the test
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(action, " "), err, errOut.String())
	}
	return out.String()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
