package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/podstep/podstep/internal/explain"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// Summary is the end of a run.
type Summary struct {
	Pod      string            `json:"pod"`
	UID      string            `json:"uid"`
	Outcome  string            `json:"outcome"` // running, succeeded, failed, stopped, interrupted
	ExitCode int               `json:"exit_code"`
	Failed   *Failure          `json:"failure,omitempty"`
	Display  string            `json:"display"`
	Ready    string            `json:"ready"`
	Restarts int32             `json:"restarts"`
	PodIP    string            `json:"pod_ip,omitempty"`
	Status   corev1.PodStatus  `json:"status"`
	Events   []podstate.Event  `json:"events"`
	Timing   Timing            `json:"timing"`
	Kept     bool              `json:"kept"`
	Leftover *steps.LeftBehind `json:"leftover,omitempty"` // what a teardown that did not finish left
	// Watched is true for a kubelet's pod seen through `podstep proxy`:
	// the kubelet made (and removes) it, and Timing.OverheadMs is the
	// kubelet's own time, not podstep's.
	Watched bool `json:"watched,omitempty"`
	// Cluster is what the API server says about the pod podstep replayed
	// (podstep run --pod); nil otherwise.
	Cluster *cluster.PodView `json:"cluster,omitempty"`
	// RestsOn is what the run's verdict rests on, on the simulated runtime
	// (steps.RestsOn: every step's Result.RestsOn, "CONTAINER: what").
	RestsOn []string `json:"rests_on,omitempty"`
	// NotReady says which running containers have a readiness probe that
	// has not passed yet (READY 0/1 while STATUS is Running): nil when
	// none.
	NotReady *NotReady `json:"not_ready,omitempty"`
}

// NotReady is the running containers whose readiness probe has not passed
// yet, at the end of a run: the pod is not Ready, and a Service would send
// it no traffic.
type NotReady struct {
	Containers []string `json:"containers"`
	// Waited: the run waited for readiness (--wait-ready) and the probe
	// still had not passed; else podstep ran no readiness probe.
	Waited  bool   `json:"waited"`
	Message string `json:"message"`
}

// NotReadyMessage is the word on containers whose readiness probe has not
// passed (NotReady.Message).
func NotReadyMessage(containers []string, waited bool) string {
	which := "the readiness probe of container " + containers[0]
	if len(containers) > 1 {
		which = "the readiness probes of containers " + strings.Join(containers, ", ")
	}
	if waited {
		return which + " had not passed when the ready stage ended: the pod is not Ready (see the ready step; --ready-timeout waits longer)"
	}
	return which + " has not passed yet: the pod is not Ready, so a Service sends it no traffic; podstep runs no readiness probe unless --wait-ready, which runs the probes and waits until the pod is Ready"
}

// Failure names where and why the pod failed.
type Failure struct {
	Stage   steps.Stage `json:"stage"`
	Step    string      `json:"step"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	// Explanation is the known failure the failed step matches
	// (internal/explain); nil when none.
	Explanation *explain.Explanation `json:"explanation,omitempty"`
}

// Timing splits a run's wall time into the runtime's and podstep's own.
type Timing struct {
	CreateMs   float64 `json:"create_ms"`
	CRIMs      float64 `json:"cri_ms"`
	WaitMs     float64 `json:"wait_ms"`
	OverheadMs float64 `json:"overhead_ms"`
	TeardownMs float64 `json:"teardown_ms"`
	Calls      int     `json:"calls"`
}

// Output formats of a Printer.
const (
	// Text is a line per step, and under it what the step changed in the
	// pod and the kubelet events it recorded.
	Text = "text"
	// Short is a line per step only (run --quiet, -o short).
	Short = "short"
	// JSON is a JSON object per line.
	JSON = "json"
)

// Printer writes step events as text or JSON lines.
type Printer struct {
	w     io.Writer
	json  bool
	short bool
	mu    sync.Mutex
	pod   string // the pod's name, for the events' OBJECT column
	steps StepBuilder
	// cleanup is the command that removes what a run keeps or leaves:
	// `podstep cleanup`, or `podstep cleanup --sim` on the simulated runtime.
	cleanup string
	buf     bytes.Buffer // a text step's lines, written at once
	// explained are the explanations printed whole already: a crash loop
	// fails many steps the same way; the later ones name the entry only.
	explained map[string]bool
	pods      podLines
}

// New returns a printer; format is Text, Short or JSON.
func New(w io.Writer, format string) *Printer {
	return &Printer{w: w, json: format == JSON, short: format == Short, cleanup: "podstep cleanup"}
}

// SetPod names the pod ("namespace/name" or "name") whose steps p prints:
// events name it as `kubectl get events` does, pod/<name>. Start sets it.
func (p *Printer) SetPod(pod string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pod = safe.Line(pod[strings.LastIndexByte(pod, '/')+1:]) // the text printer's OBJECT column
}

// Start prints the first line: which runtime, and whether it is simulated.
func (p *Printer) Start(rt render.Runtime, pod string) {
	p.SetPod(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt.Simulated {
		p.cleanup = "podstep cleanup --sim"
	}
	if p.json {
		p.emit(map[string]any{"type": "start", "pod": pod, "runtime": rt})
		return
	}
	rt, pod = cleanRuntime(rt), safe.Line(pod)
	label := "runtime " + rt.Endpoint
	if rt.Simulated {
		label = color.New(color.FgYellow, color.Bold).Sprint("SIMULATED runtime") + " (built-in, no containers really run) at " + rt.Endpoint
	}
	fmt.Fprintf(p.w, "podstep: pod %s on %s (%s)\n", pod, label, rt.Why)
}

// Observe prints each finished step; subscribe it to the engine
// (steps.Engine.Subscribe). It is safe from any goroutine.
func (p *Printer) Observe(ev steps.Event) {
	if ev.Kind != steps.StepDone {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.json {
		// The text shows each call's method only: no call is converted to
		// JSON (a relist's ListContainers answer holds every container).
		// One write a step, not one a line: the 10,000 lines of a pod
		// of 1,000 containers were 10,000 writes to stdout (issue 34).
		w := p.w
		p.buf.Reset()
		p.w = &p.buf
		p.stepText(cleanStep(methodsOnly.Step(ev)))
		p.w = w
		_, _ = w.Write(p.buf.Bytes())
		return
	}
	p.step(p.steps.Step(ev))
}

// methodsOnly builds the step objects the text printer reads: the calls
// have their methods only.
var methodsOnly = StepBuilder{Call: func(c cri.Call) CallJSON { return CallJSON{Method: c.Method} }}

// Step prints one finished step given as its JSON object: what Observe
// prints for a live step, and what a replay prints from a recording.
func (p *Printer) Step(s StepJSON) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step(s)
}

func (p *Printer) step(s StepJSON) {
	if p.json {
		p.emit(p.pods.line(s))
		return
	}
	p.stepText(cleanStep(s))
}

var (
	okMark   = color.New(color.FgGreen).Sprint("✓")
	failMark = color.New(color.FgRed, color.Bold).Sprint("✗")
	dim      = color.New(color.Faint)
	warnCol  = color.New(color.FgYellow)
	stageCol = color.New(color.FgCyan)
	// changeCol marks what a step changed, as the TUI's Changed style does.
	changeCol = color.New(color.FgYellow, color.Bold)
	// restsCol marks what a simulated verdict rests on.
	restsCol = color.New(color.FgMagenta)
	// explainCol colours a failure's explanation (internal/explain).
	explainCol = color.New(color.FgCyan)
)

// SpecVsSent is the detail of a proxied create step that compares the
// pod's spec with what the kubelet sent: the text output shows it too.
const SpecVsSent = "spec vs sent"

func (p *Printer) stepText(s StepJSON) {
	mark := okMark
	if s.State == steps.Failed {
		mark = failMark
	}
	var calls []string
	for _, c := range s.Calls {
		calls = append(calls, c.Method)
	}
	callStr := ""
	if len(calls) > 0 {
		callStr = " " + dim.Sprint("["+compactCalls(calls)+"]")
	}
	fmt.Fprintf(p.w, "%s %2d %s %s%s %s\n", mark, s.ID, stageCol.Sprintf("%-12s", s.Stage), s.Summary, callStr, dim.Sprint(render.Ms(s.DurationMs)))
	for _, w := range s.Warnings {
		if recorded(w, s.Events) && (!p.short || s.State != steps.Failed) {
			// Printed below, as the event; -q prints no events, and of a
			// step that went through (MissingClusterDNS on every pod of a
			// node without cluster DNS) not their warning either: only a
			// failed step's, which says why.
			continue
		}
		fmt.Fprintf(p.w, "       %s %s\n", warnCol.Sprint("warning:"), w)
	}
	if s.State == steps.Failed {
		fmt.Fprintf(p.w, "       %s %s\n", color.New(color.FgRed).Sprint(s.Reason+":"), s.Message)
		p.explanation(s.Explanation)
	}
	if !p.short {
		for _, r := range s.RestsOn {
			fmt.Fprintf(p.w, "       %s %s\n", restsCol.Sprint("rests on:"), r)
		}
	}
	// A hook's exit code and output are what the kubelet's own event hides,
	// so they are always shown; other steps show details only on failure.
	if s.State == steps.Failed || s.Stage == steps.StagePostStart {
		for _, d := range s.Details {
			fmt.Fprintf(p.w, "       %s: %s\n", d.Key, d.Value)
		}
	} else if !p.short {
		// podstep proxy with the pod's spec (internal/watch): how what the
		// kubelet sent differs from it, on its create steps.
		for _, d := range s.Details {
			if d.Key == SpecVsSent || d.Key == steps.WorkloadDetail {
				fmt.Fprintf(p.w, "       %s: %s\n", d.Key, d.Value)
			}
		}
	}
	if !p.short {
		p.transitions(s.Changes, s.Events)
	}
}

// recorded says whether a step's warning ("Reason: message") is one of
// its events too, as the kubelet's warnings mostly are.
func recorded(warning string, events []podstate.Event) bool {
	for _, e := range events {
		if e.Type == corev1.EventTypeWarning && strings.HasPrefix(warning, e.Reason) && strings.TrimPrefix(warning, e.Reason) == ": "+e.Message {
			return true
		}
	}
	return false
}

// transitions prints, under a step, what it changed in the pod on one line
// (nothing when nothing changed), then the kubelet events it recorded as
// `kubectl get events` lists them, warnings in the warning colour.
func (p *Printer) transitions(changes []podstate.Change, events []podstate.Event) {
	if line := podstate.FormatChanges(changes); line != "" {
		fmt.Fprintf(p.w, "       %s %s\n", changeCol.Sprint("pod:"), line)
	}
	for i, line := range podstate.FormatEvents(p.pod, events) {
		if events[i].Type == corev1.EventTypeWarning {
			line = warnCol.Sprint(line)
		}
		fmt.Fprintf(p.w, "       %s\n", line)
	}
}

// compactCalls folds runs of the same method: "ContainerStatus ×7".
func compactCalls(m []string) string {
	var out []string
	for i := 0; i < len(m); {
		j := i
		for j < len(m) && m[j] == m[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", m[i], j-i))
		} else {
			out = append(out, m[i])
		}
		i = j
	}
	return strings.Join(out, ", ")
}

// Finish prints the final line (text) or summary object (JSON).
func (p *Printer) Finish(s Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		p.emit(struct {
			Type string `json:"type"`
			Summary
		}{"summary", s})
		return
	}
	s = cleanSummary(s)
	status := s.Display
	switch s.Outcome {
	case "running", "succeeded":
		status = color.New(color.FgGreen, color.Bold).Sprint(status)
	default:
		status = color.New(color.FgRed, color.Bold).Sprint(status)
	}
	ip := s.PodIP
	if ip == "" {
		ip = "<none>"
	}
	who := "podstep"
	if s.Watched {
		who = "kubelet"
	}
	fmt.Fprintf(p.w, "pod/%s  READY %s  STATUS %s  RESTARTS %d  IP %s  created in %s (runtime %s, %s %s, %d CRI calls)",
		s.Pod, s.Ready, status, s.Restarts, ip, render.Ms(s.Timing.CreateMs), render.Ms(s.Timing.CRIMs), who, render.Ms(s.Timing.OverheadMs), s.Timing.Calls)
	if s.Watched {
		if s.Outcome == "removed" {
			fmt.Fprintf(p.w, "; removed by the kubelet (teardown %s)\n", render.Ms(s.Timing.TeardownMs))
		} else {
			fmt.Fprintf(p.w, "; the kubelet's pod, %s when podstep stopped watching\n", s.Outcome)
		}
		if s.Failed != nil {
			fmt.Fprintf(p.w, "%s stage %s, step %s: %s: %s\n", color.New(color.FgRed, color.Bold).Sprint("error:"),
				s.Failed.Stage, s.Failed.Step, s.Failed.Reason, s.Failed.Message)
			if x := s.Failed.Explanation; x != nil {
				fmt.Fprintf(p.w, "%s %s (podstep explain %s)\n", explainCol.Sprint("why:"), x.Title, x.ID)
			}
		}
		return
	}
	interrupted := ""
	if s.Outcome == "interrupted" {
		interrupted = color.New(color.FgYellow, color.Bold).Sprint("interrupted") + ", "
	}
	if s.Leftover != nil {
		fmt.Fprintf(p.w, "; %s%s after %s, left: %s (remove with: %s)\n", interrupted,
			color.New(color.FgRed, color.Bold).Sprint("teardown incomplete"), render.Ms(s.Timing.TeardownMs), s.Leftover, p.cleanup)
	} else if interrupted != "" {
		fmt.Fprintf(p.w, "; %storn down in %s\n", interrupted, render.Ms(s.Timing.TeardownMs))
	} else if s.Kept {
		fmt.Fprintf(p.w, "; kept (remove with: %s)\n", p.cleanup)
	} else {
		fmt.Fprintf(p.w, "; torn down in %s\n", render.Ms(s.Timing.TeardownMs))
	}
	if s.Failed != nil {
		fmt.Fprintf(p.w, "%s stage %s, step %s: %s: %s\n", color.New(color.FgRed, color.Bold).Sprint("error:"),
			s.Failed.Stage, s.Failed.Step, s.Failed.Reason, s.Failed.Message)
		if x := s.Failed.Explanation; x != nil {
			fmt.Fprintf(p.w, "%s %s (podstep explain %s)\n", explainCol.Sprint("why:"), x.Title, x.ID)
		}
	}
	if len(s.RestsOn) > 0 {
		fmt.Fprintf(p.w, "%s\n", restsCol.Sprint("on the simulated runtime the verdict rests on:"))
		for _, r := range s.RestsOn {
			fmt.Fprintf(p.w, "  %s\n", r)
		}
	}
	if s.NotReady != nil {
		fmt.Fprintf(p.w, "%s READY %s: %s\n", warnCol.Sprint("not ready:"), s.Ready, s.NotReady.Message)
	}
	if s.Cluster != nil {
		WriteClusterText(p.w, s.Cluster)
	}
}

func (p *Printer) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	// Ignored as for every Fprintf of the printer: the writer sees its own
	// failure (cmd's stdout wrapper turns a reader gone away into an interrupt).
	_, _ = p.w.Write(append(b, '\n'))
}

// StepJSON is the JSON object of one finished step (documented in the README).
type StepJSON struct {
	Type      string         `json:"type"`
	ID        int            `json:"id"`
	Stage     steps.Stage    `json:"stage"`
	Name      string         `json:"name"`
	Title     string         `json:"title"`
	Container string         `json:"container,omitempty"`
	Mirrors   string         `json:"mirrors"`
	State     steps.State    `json:"state"`
	Summary   string         `json:"summary"`
	Details   []steps.Detail `json:"details,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	Message   string         `json:"message,omitempty"`
	// RestsOn is what the step's verdict rests on, on the simulated
	// runtime (steps.Result.RestsOn).
	RestsOn []string `json:"rests_on,omitempty"`
	// Explanation is the known failure a failed step matches
	// (steps.Result.Explanation, internal/explain); nil when none.
	Explanation *explain.Explanation `json:"explanation,omitempty"`
	Started     time.Time            `json:"started"`
	DurationMs  float64              `json:"duration_ms"`
	Calls       []CallJSON           `json:"calls"`
	// Pod is the whole pod after the step, on the first step line that
	// has a pod and wherever the printer resyncs (PodDelta); else nil, and
	// PodDelta says what changed. A consumer folds them (PodFolder); the
	// record.Reader does so for every reader of a recording.
	Pod *PodJSON `json:"pod,omitempty"`
	// PodDelta is what the step changed in the pod since the step line
	// before, when Pod is nil (recording format version 2 and later).
	PodDelta *PodDelta `json:"pod_delta,omitempty"`
	// Changes are what the step changed in the pod (steps.Step.Changes);
	// [] when nothing changed. Only nil is left out: the step objects of
	// recordings made before podstep had them replay as they were.
	Changes []podstate.Change `json:"changes,omitzero"`
	// Events are the kubelet events recorded during the step
	// (steps.Step.Events); [] when none, and left out when nil, as Changes.
	Events []podstate.Event `json:"events,omitzero"`
}

// CallJSON is one CRI call in JSON output. Request and Response are the
// protobuf JSON (field names as in api.proto), secrets redacted.
type CallJSON struct {
	Method     string          `json:"method"`
	Request    json.RawMessage `json:"request,omitempty"`
	Response   json.RawMessage `json:"response,omitempty"`
	Code       string          `json:"code"`
	Error      string          `json:"error,omitempty"`
	Started    time.Time       `json:"started"`
	DurationMs float64         `json:"duration_ms"`
}

// PodJSON is the pod's state after a step.
type PodJSON struct {
	Phase    corev1.PodPhase  `json:"phase"`
	Display  string           `json:"display"`
	Ready    string           `json:"ready"`
	Restarts int32            `json:"restarts"`
	Status   corev1.PodStatus `json:"status"`
}

// StepBuilder turns finished steps into their JSON objects, with the
// changes and events the engine found for each step (steps.Step.Changes,
// Events).
type StepBuilder struct {
	// Call converts a step's calls (nil: CallToJSON); a recorder that has
	// converted each call as it returned passes its copies.
	Call func(cri.Call) CallJSON
}

// Step returns the JSON object of a StepDone event.
func (b *StepBuilder) Step(ev steps.Event) StepJSON {
	s := ev.Step
	out := StepJSON{Type: "step", ID: s.ID, Stage: s.Stage, Name: s.Name, Title: s.Title, Container: s.Container,
		Mirrors: s.Mirrors, State: s.State, Summary: s.Result.Summary, Details: s.Result.Details,
		Warnings: s.Result.Warnings, Reason: s.Result.Reason, Message: s.Result.Message, RestsOn: s.Result.RestsOn,
		Explanation: s.Result.Explanation,
		Started:     s.Started, DurationMs: ms(s.Duration), Calls: []CallJSON{},
		Changes: orEmpty(s.Changes), Events: orEmpty(s.Events)}
	conv := b.Call
	if conv == nil {
		conv = CallToJSON
	}
	for _, c := range s.Calls {
		out.Calls = append(out.Calls, conv(c))
	}
	if ev.Pod != nil {
		out.Pod = &PodJSON{Phase: ev.Pod.Status.Phase, Display: ev.Pod.Display, Ready: ev.Pod.Ready, Restarts: ev.Pod.Restarts, Status: ev.Pod.Status}
	}
	return out
}

// orEmpty is s, or an empty slice for nil: JSON arrays that are always
// there read more simply (`jq '.changes[]'`).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// CallToJSON converts a recorded call.
func CallToJSON(c cri.Call) CallJSON {
	j := CallJSON{Method: c.Method, Code: c.Code().String(), Started: c.Start, DurationMs: ms(c.Duration), Request: render.ProtoJSON(c.Request), Response: render.ProtoJSON(c.Response)}
	if c.Err != nil {
		j.Error = c.ErrorMessage()
	}
	return j
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// explanation prints a failed step's explanation under its error: whole the
// first time an entry shows, its title alone after that and in -q.
func (p *Printer) explanation(x *explain.Explanation) {
	if x == nil {
		return
	}
	if p.short || p.explained[x.ID] {
		fmt.Fprintf(p.w, "       %s %s (podstep explain %s)\n", explainCol.Sprint("why:"), x.Title, x.ID)
		return
	}
	if p.explained == nil {
		p.explained = map[string]bool{}
	}
	p.explained[x.ID] = true
	fmt.Fprintf(p.w, "       %s %s (podstep explain %s)\n", explainCol.Sprint("why:"), x.Title, x.ID)
	for i, c := range x.Causes {
		fmt.Fprintf(p.w, "         %s %s\n", dim.Sprintf("likely %d.", i+1), c)
	}
	fmt.Fprintf(p.w, "         %s %s\n", dim.Sprint("the kubelet next:"), x.Next)
	for _, c := range x.Confirm {
		fmt.Fprintf(p.w, "         %s %s\n", dim.Sprint("confirm:"), c)
	}
	fmt.Fprintf(p.w, "         %s %s\n", dim.Sprint("fix:"), x.Fix)
}
