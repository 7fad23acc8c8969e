package timeline

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

//go:embed page.html.tmpl
var pageTemplate string

// tmpl is the page, parsed on first use: in a package-level variable every
// podstep command paid for it (~90 KB, ~2,000 allocations; issue 36).
var tmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"ms":      fmtMs,
		"time":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 MST") },
		"stateOf": containerState,
	}).Parse(pageTemplate))
})

// view is what the template renders.
type view struct {
	*Page
	Span    string
	Ticks   []tick
	Rows    []row
	Timing  *timing
	Events  []podstate.Event
	Runtime string
}

// tick is one mark of the time axis.
type tick struct {
	Style template.CSS
	Label string
}

// row is one line of the waterfall: a step's bar and its calls' bars.
type row struct {
	S     *Step
	Style template.CSS
	Calls []callBar
}

// callBar is one CRI call's bar inside its step's row.
type callBar struct {
	Style  template.CSS
	Method string
	Code   string
	Ms     float64
}

// timing is the summary's split of the creation time, as bar widths.
type timing struct {
	report.Timing
	CRI, Wait, Own template.CSS
}

// WriteHTML writes the page. It renders twice: once without request and
// response bodies to measure the rest, then with as many bodies as fit
// under MaxPage.
func (p *Page) WriteHTML(w io.Writer) error {
	p.attachLogs()
	p.fillBodies(0)
	var n counter
	if err := p.render(&n); err != nil {
		return err
	}
	p.fillBodies(MaxPage - int(n))
	return p.render(w)
}

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(b []byte) (int, error) {
	*c += counter(len(b))
	return len(b), nil
}

func (p *Page) render(w io.Writer) error {
	t0, span := p.span()
	v := view{Page: p, Span: fmtMs(float64(span) / float64(time.Millisecond))}
	total := float64(span)
	if total <= 0 {
		total = 1
	}
	pos := func(start time.Time, ms float64) template.CSS {
		left := float64(start.Sub(t0)) / total * 100
		width := msDur(ms).Seconds() * float64(time.Second) / total * 100
		return template.CSS(fmt.Sprintf("left:%.2f%%;width:%.2f%%", clamp(left), clamp(math.Min(width, 100-clamp(left)))))
	}
	for _, s := range p.Steps {
		r := row{S: s, Style: pos(s.Started, s.DurationMs)}
		for _, c := range s.Calls {
			r.Calls = append(r.Calls, callBar{Style: pos(c.Started, c.DurationMs), Method: c.Method, Code: c.Code, Ms: c.DurationMs})
		}
		v.Rows = append(v.Rows, r)
	}
	for _, tk := range ticks(span) {
		v.Ticks = append(v.Ticks, tick{Style: template.CSS(fmt.Sprintf("left:%.3f%%", float64(tk)/total*100)), Label: fmtMs(float64(tk) / float64(time.Millisecond))})
	}
	if p.Summary != nil {
		t := p.Summary.Timing
		sum := t.CRIMs + t.WaitMs + t.OverheadMs
		if sum <= 0 {
			sum = 1
		}
		pct := func(x float64) template.CSS { return template.CSS(fmt.Sprintf("width:%.3f%%", x/sum*100)) }
		v.Timing = &timing{Timing: t, CRI: pct(t.CRIMs), Wait: pct(t.WaitMs), Own: pct(t.OverheadMs)}
		v.Events = p.Summary.Events
	} else {
		for _, s := range p.Steps {
			v.Events = append(v.Events, s.Events...)
		}
	}
	h := p.Header.Runtime
	v.Runtime = h.Endpoint
	if h.Name != "" {
		v.Runtime = fmt.Sprintf("%s %s at %s", h.Name, h.Version, h.Endpoint)
	}
	if h.Simulated {
		v.Runtime = "the SIMULATED runtime (no containers really ran)"
	}
	if err := tmpl().Execute(w, v); err != nil {
		return fmt.Errorf("write the timeline page: %w", err)
	}
	return nil
}

// ticks returns round marks (1, 2 or 5 times a power of ten) for an axis
// of length span, at most about ten.
func ticks(span time.Duration) []time.Duration {
	if span <= 0 {
		return nil
	}
	step := time.Microsecond
	for i := 0; span/step > 10; i++ {
		if i%3 == 1 {
			step = step * 5 / 2
		} else {
			step *= 2
		}
	}
	var out []time.Duration
	for t := time.Duration(0); t <= span; t += step {
		out = append(out, t)
	}
	return out
}

func clamp(x float64) float64 { return math.Max(0, math.Min(100, x)) }

// fmtMs prints a duration in milliseconds the way people read it.
func fmtMs(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms >= 10000:
		return fmt.Sprintf("%.1fs", ms/1000)
	case ms >= 1000:
		return fmt.Sprintf("%.2fs", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0fms", ms)
	default:
		return fmt.Sprintf("%.1fms", ms)
	}
}

// containerState says in a few words what a container status shows.
func containerState(cs corev1.ContainerStatus) string {
	st := cs.State
	switch {
	case st.Running != nil:
		return "running"
	case st.Waiting != nil:
		if st.Waiting.Message != "" {
			return "waiting: " + st.Waiting.Reason + " (" + st.Waiting.Message + ")"
		}
		return "waiting: " + st.Waiting.Reason
	case st.Terminated != nil:
		return fmt.Sprintf("terminated: %s, exit code %d", st.Terminated.Reason, st.Terminated.ExitCode)
	}
	return "unknown"
}

// Stages lists the stages for the legend.
func (view) Stages() []steps.Stage {
	return append(append([]steps.Stage{}, steps.Stages...), steps.StageTeardown)
}
