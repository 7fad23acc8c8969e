package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestSmallScreens: on small terminals the footer keeps ? and q (and t at
// 80 columns), dropping the least needed keys first; the help screen
// scrolls to its end; a replay shows one counter. At 80x24 the help used
// to be cut off with no way to read the rest, the footer lost t; at 60
// columns ? and q; a replay showed "plan 7/16", "step 8/16" and
// "REPLAY 8/13" at once (issue 23).
func TestSmallScreens(t *testing.T) {
	for _, tc := range []struct {
		w, h   int
		replay bool
		want   []string // in the footer
	}{
		{80, 24, false, []string{"? help", "q quit", "t timeline", "space/n next", "c continue"}},
		{60, 16, false, []string{"? help", "q quit", "space/n next", "t timeline"}},
		{60, 24, false, []string{"? help", "q quit"}},
		{80, 24, true, []string{"? help", "q quit", "t timeline", "p/← back"}},
		{60, 16, true, []string{"? help", "q quit"}},
	} {
		name := fmt.Sprintf("%dx%d", tc.w, tc.h)
		if tc.replay {
			name += "-replay"
		}
		t.Run(name, func(t *testing.T) {
			var h *harness
			var press func(k string)
			if tc.replay {
				rh := newReplayHarness(t, "crashloop.v1.rec.gz")
				h = rh.harness
				press = func(k string) { rh.press(k) }
			} else {
				h = newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
				press = func(k string) { h.press(k) }
			}
			h.resize(tc.w, tc.h)
			for range 8 {
				press("space")
			}
			f := h.frame()
			lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
			bar := lines[len(lines)-1]
			for _, w := range tc.want {
				if !strings.Contains(bar, w) {
					t.Errorf("the footer lacks %q: %q", w, bar)
				}
			}
			if strings.Contains(bar, "…") {
				t.Errorf("the footer is cut: %q", bar)
			}
			counter := regexp.MustCompile(`(plan|step|REPLAY) \d+/\d+`)
			found := counter.FindAllString(strings.Join(lines[:len(lines)-1], "\n"), -1)
			want := "plan"
			if tc.replay {
				want = "REPLAY"
			}
			if len(found) != 1 || !strings.HasPrefix(found[0], want) {
				t.Errorf("counters %q, want one, %s's:\n%s", found, want, f)
			}

			// The help, scrolled down to its end.
			press("?")
			seen := h.frame()
			for range 40 {
				press("down")
				seen += h.frame()
			}
			for _, w := range []string{"run the next step", "tear down + quit", "plan marks", "any key closes this help"} {
				if tc.replay && w == "tear down + quit" {
					w = "step back"
				}
				if tc.replay && w == "run the next step" {
					w = "step forward"
				}
				if !strings.Contains(seen, w) {
					t.Errorf("scrolling the help never shows %q", w)
				}
			}
			press("x")
			if h.m.ui != uiBrowse {
				t.Errorf("a key other than the scroll keys did not close the help")
			}
		})
	}
}
