package tui

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/podstep/podstep/internal/podstate"
)

// TestCreateStepRequestOnScreen: at 80x24 and 120x40, the frame of a
// create step shows its CRI request's start (the CreateContainer call and
// the first line of its config) without scrolling; the frames are goldens
// (create-WxH). At 80x24 the step pane had 7 rows and the request was
// below the fold (issue 33 #5).
func TestCreateStepRequestOnScreen(t *testing.T) {
	for _, sz := range sizes {
		name := fmt.Sprintf("create-%dx%d", sz.w, sz.h)
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
			h.resize(sz.w, sz.h)
			for h.m.lastID < 9 {
				h.press("space")
			}
			if s := h.eng.Steps()[8]; s.Name != "create/first" {
				t.Fatalf("step 9 is %s, want create/first", s.Name)
			}
			f := h.frame()
			for _, want := range []string{"CreateContainer → OK", "  config:"} {
				if !strings.Contains(f, want) {
					t.Errorf("%s is not on the %dx%d screen:\n%s", want, sz.w, sz.h, f)
				}
			}
			// The simulated runtime's IPs (127.A.B.C) differ from run to
			// run, in width too: the golden names it. The IP is the last
			// column, and 15 cells fit both sizes' tables.
			checkGolden(t, name, strings.ReplaceAll(f, h.m.pod.Status.PodIP, "<the pod's IP>"))
		})
	}
}

// TestPodPaneWordsWhole: in the pod pane at 80x24 (48 cells) a long IPv6
// is shown whole (under the table when the table cannot hold it), and
// the events pane wraps messages at word boundaries: no word is cut,
// except a token wider than a line, cut with "…" (issue 33 #5: "the pod
// pane cuts the IP and events mid-word").
func TestPodPaneWordsWhole(t *testing.T) {
	const ip = "fd00:10:244:1:9a3f:6c2e:b71d:4e05"
	const long = "crashloop_default(b4140011fb05cd8fc89be30ad89dd9a9b4140011fb05cd8f)"
	evs := []podstate.Event{
		{Type: "Normal", Reason: "Pulled", Object: "spec.containers{app}", Message: `Container image "docker.io/library/busybox:1.35" already present on machine`},
		{Type: "Warning", Reason: "BackOff", Object: "spec.containers{app}", Message: "Back-off restarting failed container app in pod " + long},
		{Type: "Normal", Reason: "Killing", Object: "spec.containers{app}", Message: "Stopping container app"},
	}
	words := map[string]bool{}
	for _, e := range evs {
		for _, s := range []string{e.Type, e.Reason, "app", e.Message} {
			for _, w := range strings.Fields(s) {
				words[w] = true
			}
		}
	}
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
			h.resize(sz.w, sz.h)
			for h.m.lastID < 9 {
				h.press("space")
			}
			rv := h.m.view()
			rv.pod.Status.PodIP = ip
			l := h.m.layout()
			pod := ansi.Strip(strings.Join(h.m.podP.view(h.m.podP.lines(rv, l.rightW-1), l.rightW, max(l.podH, 4)), "\n"))
			if !strings.Contains(pod, ip) {
				t.Errorf("the pod pane (%d cells) does not show the IP %s whole:\n%s", l.rightW, ip, pod)
			}
			for _, eh := range []int{1, 2, 4, 8} {
				rv.pod.Events = evs
				lines := h.m.evs.view(rv, modeRequest, l.rightW, eh)
				if len(lines) != eh {
					t.Fatalf("%d events lines, want %d", len(lines), eh)
				}
				for _, ln := range lines {
					ln = ansi.Strip(ln)
					if n := utf8.RuneCountInString(ln); n > l.rightW {
						t.Errorf("%q is %d wide, the pane %d", ln, n, l.rightW)
					}
					for _, w := range strings.Fields(strings.TrimLeft(ln, " •")) {
						if w == "…" || words[w] {
							continue
						}
						if stem, ok := strings.CutSuffix(w, "…"); ok && utf8.RuneCountInString(w) >= 20 && cutOf(words, stem) {
							continue // a token wider than its line, cut
						}
						t.Errorf("events in %d lines of %d cells: %q is not a whole word of the events (cut mid-word?)\n%s", eh, l.rightW, w, ansi.Strip(strings.Join(lines, "\n")))
					}
				}
			}
		})
	}
}

// cutOf says whether stem is the start of a longer word of words.
func cutOf(words map[string]bool, stem string) bool {
	for w := range words {
		if len(w) > len(stem) && strings.HasPrefix(w, stem) {
			return true
		}
	}
	return false
}
