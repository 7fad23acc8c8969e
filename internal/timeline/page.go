// Package timeline renders a recording (internal/record) as one
// self-contained HTML page: a waterfall of the pod's creation on a time
// axis, the steps with what the kubelet does and the function each mirrors,
// their CRI requests and responses, the pod status after each step and the
// kubelet events. The page loads nothing from elsewhere.
package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// MaxPage is the size the page aims to stay under (the bar is 2 MB for a
// 1,000-step recording): request and response bodies fill what the rest of
// the page leaves, in step order; past that, a call says its bodies are in
// the recording (replay --auto -o json).
const MaxPage = 1_900_000

// MaxBody bounds one request or response body on the page.
const MaxBody = 16 << 10

// What the page keeps of a recording's logs and steps: a crafted recording
// of a few MiB compressed (a log line repeated, steps repeated) would
// otherwise make a page, and a process, of gigabytes. Past a bound the page
// says how many were cut; the recording keeps them all (replay).
const (
	// MaxLogLines is the most log lines on the page, in all.
	MaxLogLines = 1000
	// MaxLogLine is the longest log line kept whole, in bytes.
	MaxLogLine = 1024
	// MaxSteps is the most steps on the page.
	MaxSteps = 2000
)

// Page is what the page shows, built from a recording's lines in order.
type Page struct {
	// Source names the recording (its file name).
	Source  string
	Header  record.Header
	Start   *record.Start
	Steps   []*Step
	Summary *report.Summary
	// Damage says where and why the recording stopped being readable.
	Damage string
	// Hidden counts the calls whose bodies did not fit on the page.
	Hidden int
	// StepsCut counts the steps past MaxSteps, not on the page.
	StepsCut int

	plan      map[int]report.PlanStepJSON // by step ID, the latest plan line's
	explained map[string]int              // step name → first step showing its explanation
	seen      map[int]int                 // step ID → step lines with it so far
	logs      map[int][]record.Log
	logLines  int         // log lines kept
	logsCut   map[int]int // step ID → log lines past MaxLogLines
}

// Step is one finished step and what the page shows of it.
type Step struct {
	report.StepJSON
	// Explain is what the kubelet does here, from the plan; empty when an
	// earlier step of the same name already said it (ExplainedAt).
	Explain     string
	ExplainedAt int
	Wait        bool
	// Anchor is the id of the step's section: step-N, or step-N.2 for a
	// step retried in the TUI (a later line with the same ID).
	Anchor string
	// PodSame is true when the pod's status is the previous step's.
	PodSame bool
	Logs    []record.Log
	// LogsCut counts the step's log lines past MaxLogLines.
	LogsCut int
	Bodies  []CallBodies
}

// CallBodies are a call's request and response as shown: indented JSON,
// escaped for an HTML element's text.
type CallBodies struct {
	Request, Response template.HTML
	// Shown is false when the page had no room left for them.
	Shown bool
}

// New returns an empty page for the recording source with header h.
func New(source string, h record.Header) *Page {
	return &Page{Source: source, Header: h, plan: map[int]report.PlanStepJSON{},
		explained: map[string]int{}, seen: map[int]int{}, logs: map[int][]record.Log{}, logsCut: map[int]int{}}
}

// Add takes the next line of the recording.
func (p *Page) Add(ev record.Event) {
	switch {
	case ev.Start != nil:
		p.Start = ev.Start
	case ev.Plan != nil:
		for _, s := range ev.Plan.Steps {
			p.plan[s.ID] = s
		}
	case ev.Log != nil:
		if p.logLines >= MaxLogLines {
			p.logsCut[ev.Log.Step]++
			break
		}
		p.logLines++
		l := *ev.Log
		if len(l.Line) > MaxLogLine {
			i := MaxLogLine
			for i > 0 && !utf8.RuneStart(l.Line[i]) {
				i--
			}
			l.Line = l.Line[:i] + fmt.Sprintf("…[cut: %d bytes]", len(l.Line))
		}
		p.logs[l.Step] = append(p.logs[l.Step], l)
	case ev.Step != nil:
		p.addStep(*ev.Step)
	case ev.Summary != nil:
		p.Summary = ev.Summary
	}
}

func (p *Page) addStep(sj report.StepJSON) {
	if len(p.Steps) >= MaxSteps {
		p.StepsCut++
		return
	}
	s := &Step{StepJSON: sj, Wait: steps.KindOf(sj.Name).Waits(), Anchor: "step-" + strconv.Itoa(sj.ID)}
	if p.seen[sj.ID]++; p.seen[sj.ID] > 1 {
		s.Anchor += "." + strconv.Itoa(p.seen[sj.ID])
	}
	if pl, ok := p.plan[sj.ID]; ok && pl.Name == sj.Name {
		s.Explain = pl.Explain
	}
	if first, ok := p.explained[sj.Name]; ok {
		s.Explain, s.ExplainedAt = "", first
	} else if s.Explain != "" {
		p.explained[sj.Name] = sj.ID
	}
	if n := len(p.Steps); n > 0 && sj.Pod != nil && p.Steps[n-1].Pod != nil {
		prev, _ := json.Marshal(p.Steps[n-1].Pod)
		now, _ := json.Marshal(sj.Pod)
		s.PodSame = bytes.Equal(prev, now)
	}
	p.Steps = append(p.Steps, s)
}

// attachLogs gives each step the log lines read after it.
func (p *Page) attachLogs() {
	for _, s := range p.Steps {
		s.Logs, s.LogsCut = p.logs[s.ID], p.logsCut[s.ID]
	}
}

// body indents a recorded JSON body and escapes it for a <pre>: in an
// element's text, escaping &, < and > is all HTML needs (quotes stay as
// they are, which keeps JSON readable and the page small).
func body(raw json.RawMessage) template.HTML {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		b.Reset()
		b.Write(raw)
	}
	out := b.String()
	if len(out) > MaxBody {
		out = out[:MaxBody] + "\n… (cut here: podstep replay FILE --auto -o json shows all of it)"
	}
	return template.HTML(textEscaper.Replace(out))
}

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// fillBodies gives calls their bodies, in step order, while they fit in
// room bytes.
func (p *Page) fillBodies(room int) {
	p.Hidden = 0
	for _, s := range p.Steps {
		s.Bodies = make([]CallBodies, len(s.Calls))
		for i, c := range s.Calls {
			b := CallBodies{Request: body(c.Request), Response: body(c.Response)}
			n := len(b.Request) + len(b.Response) + 160 // and the markup around them
			if n > room {
				p.Hidden++
				continue
			}
			room -= n
			b.Shown = true
			s.Bodies[i] = b
		}
	}
}

// span is the time from the first step's start to the last step's end.
func (p *Page) span() (time.Time, time.Duration) {
	if len(p.Steps) == 0 {
		return time.Time{}, 0
	}
	t0 := p.Steps[0].Started
	end := t0
	for _, s := range p.Steps {
		if e := s.Started.Add(msDur(s.DurationMs)); e.After(end) {
			end = e
		}
		for _, c := range s.Calls {
			if e := c.Started.Add(msDur(c.DurationMs)); e.After(end) {
				end = e
			}
		}
	}
	return t0, end.Sub(t0)
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
