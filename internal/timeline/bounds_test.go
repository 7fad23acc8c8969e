package timeline

import (
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
)

// TestPageBounds: a recording of 100,000 log lines of 10 KiB and 20,000
// steps (issue 25: a 1.1 MB .rec.gz made a 1.07 GB page) makes a page of a
// few MB that says what it cut: log lines past MaxLogLines, the end of
// lines past MaxLogLine, steps past MaxSteps.
func TestPageBounds(t *testing.T) {
	src := load(t, "../../testdata/recordings/crashloop.v1.rec.gz")
	p := New("crafted.rec.gz", src.Header)
	step := src.Steps[0].StepJSON
	long := strings.Repeat("L", 10<<10)
	for id := 1; id <= 20000; id++ {
		s := step
		s.ID, s.Calls = id, nil
		p.Add(record.Event{Step: &s})
		if id <= 100 {
			for range 1000 {
				p.Add(record.Event{Log: &record.Log{Type: "log", Step: id, Container: "app", Stream: "stdout", Line: long}})
			}
		}
	}
	p.Add(record.Event{Summary: &report.Summary{}})
	page, doc := render(t, p)
	if len(page) > 8<<20 {
		t.Errorf("page is %d bytes, want a few MB", len(page))
	}
	if n := len(find(doc, "div", "bar", "step")); n != MaxSteps {
		t.Errorf("%d step bars, want MaxSteps = %d", n, MaxSteps)
	}
	for _, want := range []string{"… 18000 more steps cut", "… 1000 more lines cut", "…[cut: 10240 bytes]"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if n := strings.Count(page, "app stdout: "); n != MaxLogLines {
		t.Errorf("%d log lines on the page, want MaxLogLines = %d", n, MaxLogLines)
	}
	t.Logf("page: %d bytes", len(page))
}
