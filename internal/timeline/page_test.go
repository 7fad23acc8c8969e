package timeline

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// load reads a recording into a page.
func load(t *testing.T, path string) *Page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := record.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p := New("test.rec.gz", rd.Header())
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return p
		}
		if err != nil {
			t.Fatal(err)
		}
		p.Add(ev)
	}
}

// render writes the page and parses it back.
func render(t *testing.T, p *Page) (string, *html.Node) {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), doc
}

// find returns the elements named tag whose class list has every class.
func find(n *html.Node, tag string, classes ...string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) && hasClasses(n, classes) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClasses(n *html.Node, classes []string) bool {
	have := strings.Fields(attr(n, "class"))
	for _, c := range classes {
		found := false
		for _, h := range have {
			found = found || h == c
		}
		if !found {
			return false
		}
	}
	return true
}

func TestPageOfCrashLoop(t *testing.T) {
	p := load(t, "../../testdata/recordings/crashloop.v1.rec.gz")
	page, doc := render(t, p)

	bars := find(doc, "div", "bar", "step")
	if len(bars) != len(p.Steps) || len(p.Steps) < 10 {
		t.Fatalf("%d step bars for %d steps", len(bars), len(p.Steps))
	}
	var failed, waits int
	for i, b := range bars {
		s := p.Steps[i]
		if got := attr(b, "data-step"); got != itoa(s.ID) {
			t.Errorf("bar %d: data-step %q, want %d", i, got, s.ID)
		}
		if hasClasses(b, []string{"failed"}) != (s.State == "failed") {
			t.Errorf("step %d (%s, %s): bar class %q", s.ID, s.Name, s.State, attr(b, "class"))
		}
		if hasClasses(b, []string{"failed"}) {
			failed++
		}
		if hasClasses(b, []string{"wait"}) {
			waits++
		}
		if !hasClasses(b, []string{"st-" + string(s.Stage)}) {
			t.Errorf("step %d: bar class %q lacks its stage", s.ID, attr(b, "class"))
		}
	}
	if failed == 0 || waits == 0 {
		t.Errorf("crash loop: %d failed bars, %d wait bars; want both", failed, waits)
	}
	if n, want := len(find(doc, "span", "failed-mark")), failed; n != want {
		t.Errorf("%d failure marks, want %d", n, want)
	}
	calls := 0
	for _, s := range p.Steps {
		calls += len(s.Calls)
	}
	if n := len(find(doc, "div", "bar", "call")); n != calls || calls == 0 {
		t.Errorf("%d call bars, want %d", n, calls)
	}
	// The small recording fits: every call is a <details> with its bodies.
	if n := len(find(doc, "details", "call")); n != calls {
		t.Errorf("%d collapsible calls, want %d", n, calls)
	}
	if n := len(find(doc, "section", "step")); n != len(p.Steps) {
		t.Errorf("%d step sections, want %d", n, len(p.Steps))
	}
	for _, want := range []string{"GenericPLEG.Relist", "Where the time went", `id="split"`, "BackOff", "crashing"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	selfContained(t, doc)
}

// selfContained fails when the page would load anything from elsewhere.
func selfContained(t *testing.T, doc *html.Node) {
	t.Helper()
	for _, n := range find(doc, "") {
		switch n.Data {
		case "script", "link", "iframe", "img", "object", "embed":
			t.Errorf("page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q> points outside the page", n.Data, a.Key, a.Val)
			}
			if strings.Contains(a.Val, "url(") {
				t.Errorf("<%s %s=%q> loads a url", n.Data, a.Key, a.Val)
			}
		}
	}
}

func TestPageEscapes(t *testing.T) {
	p := New(`<b>x</b>.rec`, record.Header{Podstep: `"><script>alert(1)</script>`})
	evil := `<script>alert("pwned")</script><img src=x onerror=alert(1)>`
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.Add(record.Event{Plan: &record.Plan{From: 1, Steps: []report.PlanStepJSON{{ID: 1, Name: "create/app", Explain: evil, Mirrors: evil}}}})
	p.Add(record.Event{Step: &report.StepJSON{ID: 1, Name: "create/app", Stage: "containers", State: "failed", Title: evil,
		Summary: evil, Reason: evil, Message: evil, Started: t0, DurationMs: 3,
		Calls: []report.CallJSON{{Method: "CreateContainer", Code: "Unknown", Error: evil, Started: t0, DurationMs: 1,
			Request: []byte(`{"config":{"command":["` + strings.ReplaceAll(evil, `"`, `\"`) + `"]}}`)}}}})
	p.Add(record.Event{Log: &record.Log{Step: 1, Container: "app", Line: evil}})
	page, doc := render(t, p)
	selfContained(t, doc)
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Errorf("runtime text reached the page unescaped:\n%s", page)
	}
	if !strings.Contains(page, `&lt;script&gt;alert(&#34;pwned&#34;)`) && !strings.Contains(page, `&lt;script&gt;alert(\&#34;pwned`) {
		t.Errorf("the escaped message is missing")
	}
}

func TestPageOf1000StepsUnder2MB(t *testing.T) {
	src := load(t, "../../testdata/recordings/crashloop.v1.rec.gz")
	// A crash loop's cycle, repeated to 1,000 steps, one after the other.
	var cycle []report.StepJSON
	for _, s := range src.Steps {
		if s.Stage == "containers" {
			cycle = append(cycle, s.StepJSON)
		}
	}
	p := New("big.rec.gz", src.Header)
	p.Add(record.Event{Plan: &record.Plan{From: 1, Steps: []report.PlanStepJSON{{ID: 1, Name: "relist", Explain: "what the PLEG does", Mirrors: "GenericPLEG.Relist"}}}})
	t0 := cycle[0].Started
	for id := 1; id <= 1000; id++ {
		s := cycle[(id-1)%len(cycle)]
		shift := time.Duration(id) * 3 * time.Millisecond
		s.ID = id
		s.Started = t0.Add(shift)
		calls := make([]report.CallJSON, len(s.Calls))
		for i, c := range s.Calls {
			c.Started = c.Started.Add(shift)
			calls[i] = c
		}
		s.Calls = calls
		p.Add(record.Event{Step: &s})
	}
	p.Add(record.Event{Summary: src.Summary})
	page, doc := render(t, p)
	if len(page) > 2_000_000 {
		t.Errorf("the page of 1,000 steps is %d bytes, want ≤ 2 MB", len(page))
	}
	if n := len(find(doc, "div", "bar", "step")); n != 1000 {
		t.Errorf("%d step bars, want 1000", n)
	}
	if p.Hidden == 0 || !strings.Contains(page, `id="hidden"`) {
		t.Errorf("no call bodies were left out (%d), yet the page is %d bytes", p.Hidden, len(page))
	}
	t.Logf("1,000 steps: %d bytes, %d calls without their bodies", len(page), p.Hidden)
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestPageRetriedStep: a step retried in the TUI has two step lines with
// one ID; each gets a bar and a section, and the sections' ids differ.
func TestPageRetriedStep(t *testing.T) {
	p := New("retry.rec", record.Header{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, state := range []string{"failed", "done"} {
		p.Add(record.Event{Step: &report.StepJSON{ID: 3, Name: "create/app", Stage: "containers", State: steps.State(state),
			Started: t0.Add(time.Duration(i) * time.Second), DurationMs: 10}})
	}
	_, doc := render(t, p)
	if n := len(find(doc, "div", "bar", "step")); n != 2 {
		t.Errorf("%d bars, want 2", n)
	}
	ids := map[string]bool{}
	for _, s := range find(doc, "section", "step") {
		ids[attr(s, "id")] = true
	}
	if !ids["step-3"] || !ids["step-3.2"] {
		t.Errorf("section ids %v, want step-3 and step-3.2", ids)
	}
}
