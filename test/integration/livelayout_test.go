//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/live/livetest"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/test/internal/testenv"
)

// layoutProbe measures the live page as a person sees it, in the browser:
// the page's width against the window's, every value box's height in
// lines, whether a word of a value or an event is drawn across two lines
// (a Range over the word with more than one client rect: broken inside),
// and whether the big STATUS or the events list is cut (scrollWidth over
// clientWidth). Words longer than 24 characters are long tokens (an
// IPv6, a pod UID in an event) and may break.
const layoutProbe = `(() => {
  const lh = (e) => { const cs = getComputedStyle(e); const l = parseFloat(cs.lineHeight); return isNaN(l) ? 1.2 * parseFloat(cs.fontSize) : l; };
  const name = (e) => (e.id ? "#" + e.id : e.tagName.toLowerCase() + "." + e.className) + " " + JSON.stringify(e.textContent.slice(0, 40));
  const out = {scrollWidth: document.documentElement.scrollWidth, innerWidth: innerWidth, problems: []};
  for (const e of document.querySelectorAll("#display, #podfacts dt, #podfacts dd, #containers li, #count, #outcome, #pod")) {
    const h = e.getBoundingClientRect().height;
    if (h > 2 * lh(e) + 1) out.problems.push(name(e) + ": " + Math.round(h) + "px high, more than 2 lines of " + Math.round(lh(e)) + "px");
  }
  const d = document.getElementById("display");
  if (d.scrollWidth > d.clientWidth) out.problems.push("STATUS " + JSON.stringify(d.textContent) + " is cut: scrollWidth " + d.scrollWidth + " > clientWidth " + d.clientWidth);
  for (const e of [document.getElementById("events"), ...document.querySelectorAll("#events li")]) {
    if (e.scrollWidth > e.clientWidth) out.problems.push(name(e) + ": scrolls sideways (" + e.scrollWidth + " > " + e.clientWidth + ")");
  }
  const words = [];
  for (const root of document.querySelectorAll("#display, #podfacts, #containers, #events, #now, #pod, #scenario, #runtime")) {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const re = /\S+/g; let m;
      while ((m = re.exec(n.data))) {
        if (m[0].length > 24) continue;
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const rows = new Set([...r.getClientRects()].filter((c) => c.width > 0).map((c) => Math.round(c.top)));
        if (rows.size > 1) out.problems.push("the word " + JSON.stringify(m[0]) + " in " + name(n.parentElement) + " is broken over " + rows.size + " lines");
      }
    }
  }
  return JSON.stringify(out);
})()`

// TestLivePageLayout opens the live page in headless chromium at the sizes
// a classroom has: a 1024x768 laptop or projector, and a 1920x1080
// projector at 150% zoom (a 1280x720 CSS window at device scale 1.5). The
// page shows the shipped crashloop recording (STATUS CrashLoopBackOff,
// events with a pod UID in them) with its pod IP made a long IPv6 and its
// scenario and lesson named, served by the live package in this process.
// At each size: no sideways scrolling, no value box over 2 lines (the
// phase or the IP one letter per line), no word of a value or an event
// broken across lines (only tokens over 24 characters may break), the big
// STATUS whole (and a longer one, Init:CreateContainerConfigError), no
// event list that scrolls sideways. Layout, not pixels:
// a screenshot of each size is written to $PODSTEP_SCREENSHOTS when set,
// for a person to look at.
func TestLivePageLayout(t *testing.T) {
	root := testenv.RepoRoot()
	if root == "" {
		t.Fatal("no repository root above the test's directory")
	}
	raw, err := os.ReadFile(filepath.Join(root, "testdata", "recordings", "crashloop.rec.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	const longIP = "fd00:10:244:1:9a3f:6c2e:b71d:4e05"
	// The pod IP the recording's summary names (the harness gave it; the
	// recordings are made again as podstep changes) becomes a long one.
	m := regexp.MustCompile(`"pod_ip":"([0-9.]+)"`).FindSubmatch(rec)
	if m == nil || !bytes.Contains(rec, []byte("CrashLoopBackOff")) {
		t.Fatal("testdata/recordings/crashloop.rec.gz has no pod IP in its summary or no CrashLoopBackOff: update this test")
	}
	rec = bytes.ReplaceAll(rec, []byte(`"`+string(m[1])+`"`), []byte(`"`+longIP+`"`))
	sc, err := scenario.Get("crashloop")
	if err != nil {
		t.Fatal(err)
	}
	scLine, _ := json.Marshal(live.Scenario{Type: "scenario", Name: sc.Name, Story: sc.Lesson.Story, Lesson: sc.Lesson.Wrong, Fix: sc.Lesson.Fix})

	srv := live.New()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	lines := bytes.SplitAfter(rec, []byte("\n"))
	// The scenario line goes after the start line, as the server sends it.
	for _, l := range lines {
		if _, err := srv.Hub.Write(l); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(l, []byte(`"type":"start"`)) {
			_, _ = srv.Hub.Write(append(scLine, '\n'))
		}
	}

	br := livetest.Start(t)
	for _, vp := range []struct {
		name          string
		width, height int
		scale         float64
	}{
		{"1024x768", 1024, 768, 1},
		{"1920x1080 at 150%", 1280, 720, 1.5},
	} {
		t.Run(vp.name, func(t *testing.T) {
			br.Call(t, br.Session(), "Emulation.setDeviceMetricsOverride", map[string]any{
				"width": vp.width, "height": vp.height, "deviceScaleFactor": vp.scale, "mobile": false}, nil)
			br.Open(t, ts.URL)
			deadline := time.Now().Add(10 * time.Second)
			for br.Text(t, "outcome") == "" {
				if time.Now().After(deadline) {
					t.Fatal("the page did not show the run's summary")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := br.Text(t, "display"); got != "CrashLoopBackOff" {
				t.Fatalf("STATUS %q, want CrashLoopBackOff", got)
			}
			var facts string
			br.Eval(t, `JSON.stringify(document.getElementById("podfacts").textContent)`, &facts)
			if !strings.Contains(facts, longIP) {
				t.Fatalf("the pod's facts do not show the IP %s: %q", longIP, facts)
			}
			var m struct {
				ScrollWidth, InnerWidth int
				Problems                []string
			}
			br.Eval(t, layoutProbe, &m)
			if m.InnerWidth != vp.width {
				t.Fatalf("window %d CSS pixels wide, want %d", m.InnerWidth, vp.width)
			}
			if m.ScrollWidth > m.InnerWidth {
				m.Problems = append(m.Problems, fmt.Sprintf("the page scrolls sideways: %d CSS pixels wide in a %d window", m.ScrollWidth, m.InnerWidth))
			}
			if dir := os.Getenv("PODSTEP_SCREENSHOTS"); dir != "" {
				var shot struct{ Data string }
				br.Call(t, br.Session(), "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
				png, _ := base64.StdEncoding.DecodeString(shot.Data)
				file := filepath.Join(dir, "live-"+strings.NewReplacer(" ", "-", "%", "").Replace(vp.name)+".png")
				if err := os.WriteFile(file, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", file)
			}
			for _, p := range m.Problems {
				t.Error(p)
			}
			// A longer STATUS (an init container's config error) is made
			// to fit too: the page refits it when the window changes.
			var fitW [2]int
			br.Eval(t, `(() => { const d = document.getElementById("display"); d.textContent = "Init:CreateContainerConfigError";
  window.dispatchEvent(new Event("resize")); return JSON.stringify([d.scrollWidth, d.clientWidth]); })()`, &fitW)
			if fitW[0] > fitW[1] {
				t.Errorf("STATUS Init:CreateContainerConfigError is cut: scrollWidth %d > clientWidth %d", fitW[0], fitW[1])
			}
		})
	}
}
