package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Status says how far a node's runner got.
type Status string

// The statuses of a node.
const (
	// Ran: the runner ran `podstep run` to its end and printed its summary.
	Ran Status = "ran"
	// Unschedulable: the runner cannot be placed on the node (the kubelet
	// rejected it, e.g. OutOfcpu or NodeAffinity).
	Unschedulable Status = "runner unschedulable"
	// NotStarted: the runner did not start within --timeout (its error
	// says why: the node not Ready, the runner's image not pulled, ...).
	NotStarted Status = "runner not started"
	// Crashed: the runner ended without printing a summary.
	Crashed Status = "runner crashed"
	// Interrupted: the fleet was interrupted (Ctrl-C) before the node's
	// result came.
	Interrupted Status = "interrupted"
	// Failed: podstep could not make the node's runner (an API error).
	Failed Status = "error"
)

// Result is one node's outcome: what its runner printed, and what the
// fleet knows of the node.
type Result struct {
	Node string `json:"node"`
	// Status is how far the runner got; Steps and Summary are set when it
	// ran.
	Status Status `json:"status"`
	// Runtime is the runtime's name and version as its Version call
	// answered ("containerd v2.4.2"), else the Node's containerRuntimeVersion.
	Runtime string `json:"runtime"`
	// Kubelet is the node's kubelet version (status.nodeInfo).
	Kubelet string `json:"kubelet"`
	// Endpoint is the runtime endpoint the runner replayed on, and
	// EndpointFrom why: FromAnnotation (the node's replay runtime),
	// FromConfigz or FromDefault (the kubelet's own runtime), FromFlag (-r).
	Endpoint     string `json:"endpoint,omitempty"`
	EndpointFrom string `json:"endpoint_from,omitempty"`
	// Shadow: the runner replayed on a shadow of that runtime (its start
	// line's runtime.why says which and how it differs from the node).
	Shadow bool `json:"shadow,omitempty"`
	// StoppedFromOutside, when the run failed, is the evidence that
	// something else stopped the replayed pod's sandbox or containers (a
	// hint; Steps and Summary keep the real error). See StoppedHint.
	StoppedFromOutside string `json:"stopped_from_outside,omitempty"`
	// Start is the runner's start line: the runtime it connected to.
	Start *render.Runtime `json:"start,omitempty"`
	// Steps are every step the runner printed, in order.
	Steps []report.StepJSON `json:"steps"`
	// Summary is the runner's final summary (nil when it did not end).
	Summary *report.Summary `json:"summary,omitempty"`
	// ExitCode is the runner's exit code (run's codes), or the fleet's
	// for a runner that did not run (ExitRuntime).
	ExitCode int `json:"exit_code"`
	// Error says why a node has no result (Status other than Ran).
	Error string `json:"error,omitempty"`
	// LastLog are the runner's last lines that are not JSON (its stderr):
	// why a runner crashed, or what run said at its end.
	LastLog []string `json:"last_log,omitempty"`
	// WallMs is the runner's wall time, from its creation to its end.
	WallMs float64 `json:"wall_ms"`
	// Recording is the file --record wrote for this node.
	Recording string `json:"recording,omitempty"`
}

// maxLastLog bounds Result.LastLog.
const maxLastLog = 20

// Parser reads a runner's log, `podstep run --auto -o json` output, one
// line at a time (Line), or at once (Parse).
type Parser struct {
	r *Result
}

// NewParser returns a parser filling r.
func NewParser(r *Result) *Parser { return &Parser{r: r} }

// Line takes one line of the runner's log. It returns the step it holds,
// if any (for progress lines). Lines that are not run's JSON objects are
// kept, the last maxLastLog of them, cleaned of control characters.
func (p *Parser) Line(line []byte) *report.StepJSON {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if line[0] != '{' || json.Unmarshal(line, &head) != nil {
		p.log(string(line))
		return nil
	}
	switch head.Type {
	case "start":
		var s struct {
			Runtime render.Runtime `json:"runtime"`
		}
		if json.Unmarshal(line, &s) == nil {
			p.r.Start = &s.Runtime
			// session's startShadow: "…; ran on a shadow of …"
			p.r.Shadow = strings.Contains(s.Runtime.Why, "; ran on a shadow of ")
		}
	case "step":
		var s report.StepJSON
		if json.Unmarshal(line, &s) != nil {
			p.log(string(line))
			return nil
		}
		p.r.Steps = append(p.r.Steps, s)
		if v := runtimeVersion(&s); v != "" {
			p.r.Runtime = v
		}
		return &p.r.Steps[len(p.r.Steps)-1]
	case "summary":
		var s report.Summary
		if json.Unmarshal(line, &s) != nil {
			p.log(string(line))
			return nil
		}
		p.r.Summary = &s
	default:
		p.log(string(line))
	}
	return nil
}

func (p *Parser) log(s string) {
	p.r.LastLog = append(p.r.LastLog, Clean(s))
	if n := len(p.r.LastLog); n > maxLastLog {
		p.r.LastLog = append(p.r.LastLog[:0:0], p.r.LastLog[n-maxLastLog:]...)
	}
}

// Parse reads a runner's log into r to its end (lines of any length): a
// whole log, or one followed as it comes.
func Parse(rd io.Reader, r *Result) error {
	p := NewParser(r)
	br := bufio.NewReaderSize(rd, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			p.Line(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// runtimeVersion reads "NAME VERSION" from the runtime-status step's
// Version call.
func runtimeVersion(s *report.StepJSON) string {
	for _, c := range s.Calls {
		if c.Method != "Version" || len(c.Response) == 0 {
			continue
		}
		var v struct {
			Name    string `json:"runtime_name"`
			Version string `json:"runtime_version"`
		}
		if json.Unmarshal(c.Response, &v) == nil && v.Name != "" {
			return Clean(strings.TrimSpace(v.Name + " " + v.Version))
		}
	}
	return ""
}

// Failure is where a node's run failed: the summary's, else the first
// failed step's.
func (r *Result) Failure() *report.Failure {
	if r.Summary != nil && r.Summary.Failed != nil {
		return r.Summary.Failed
	}
	for _, s := range r.Steps {
		if s.State == steps.Failed {
			return &report.Failure{Stage: s.Stage, Step: s.Name, Reason: s.Reason, Message: s.Message, Explanation: s.Explanation}
		}
	}
	return nil
}

// Outcome is the node's outcome in one word or phrase: the run's summary
// outcome (running, succeeded, failed, ...) or the runner's status.
func (r *Result) Outcome() string {
	if r.Status != Ran {
		return string(r.Status)
	}
	if r.Summary == nil {
		return "no summary"
	}
	return r.Summary.Outcome
}

// StageMs sums each stage's step durations, teardown included.
func (r *Result) StageMs() map[steps.Stage]float64 {
	out := map[steps.Stage]float64{}
	for _, s := range r.Steps {
		out[s.Stage] += s.DurationMs
	}
	return out
}

// Clean makes text from outside (runner logs, the API server, runtimes)
// safe for a terminal: control characters (but tab) become U+FFFD.
func Clean(s string) string {
	ok := true
	for _, c := range s {
		if c != '\t' && (unicode.IsControl(c) || c == unicode.ReplacementChar) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return strings.Map(func(c rune) rune {
		if c != '\t' && unicode.IsControl(c) {
			return unicode.ReplacementChar
		}
		return c
	}, s)
}
