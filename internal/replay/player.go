package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// ErrRetry is Retry's answer: a replay shows what the run did.
var ErrRetry = errors.New("retry is not available in a replay: it shows what the recorded run did (p goes back, space forward)")

// run is one step line of the recording: a step that ran.
type run struct {
	step     steps.Step      // as it ended: state, result, calls
	requests []steps.Request // the exact requests it was about to send (step-started)
	// pod is the whole pod after it, kept where the line had it whole
	// (every line of a version 1 recording) and every keepEvery runs;
	// else nil, and delta is what it changed (nil: nothing). PodAt folds
	// them: a pod per run made a replay's memory quadratic in the
	// containers (issue 34).
	pod    *report.PodJSON
	delta  *report.PodDelta
	events int // kubelet events recorded up to it
	logs   int // log lines recorded up to it
	plan   int // the plan version in force when it ran
}

// entry is one step of a plan version.
type entry struct {
	step  steps.Step // pending (or skipped), with its planned requests
	since int        // runs done when the plan line listing it was written
}

// Player is a recording played back: a tui.Engine whose position is the
// number of the recording's steps that have run, and that can move to any
// position (Seek), back as well as forward. Open reads the recording in
// the background: what is read is there at once, and a method that needs
// a step not read yet waits for it. Its methods are for one goroutine.
type Player struct {
	header record.Header
	pod    *corev1.Pod
	start  podstate.Snapshot // the pod before any step

	// What was read; the loader appends while lmu is held, and signals
	// more on each step and at the end (done).
	lmu     sync.Mutex
	more    *sync.Cond
	done    chan struct{}
	stop    bool
	runs    []run
	plans   [][]entry
	planAt  []int // plan version at each position 0..len(runs), once read
	events  []podstate.Event
	logs    []record.Log
	summary *report.Summary
	damage  error // why the recording stops early, nil when it reads to its summary
	// tail is the step a damaged recording began last but whose step line
	// it lacks: what the run was doing when the recording stops.
	tail *record.StepStarted

	// keepEvery is how many runs may pass without a whole pod kept:
	// the pod's containers, at least 64 (so the whole pods kept add up
	// to a few, whatever the pod's size).
	keepEvery int

	pos      int
	stageBrk map[steps.Stage]bool
	stepBrk  map[int]bool

	mu   sync.Mutex
	subs []*func(steps.Event)
}

// Load reads a whole recording. A recording that is damaged or cut off is
// played up to the damage: Load returns the player and Damage says why
// it ends early. Only a file that is not a recording, or of a newer
// format, is an error (*record.NotRecordingError, *record.VersionError).
func Load(r io.Reader) (*Player, error) {
	p, err := Open(r)
	if err != nil {
		return nil, err
	}
	<-p.done
	return p, nil
}

// Open reads the header and goes on reading the recording in the
// background (Loaded is closed once it is all read); Close stops it.
// Errors are those of Load.
func Open(r io.Reader) (*Player, error) {
	rd, err := record.NewReader(r)
	if err != nil {
		return nil, err
	}
	p := &Player{header: rd.Header(), stageBrk: map[steps.Stage]bool{}, stepBrk: map[int]bool{}, done: make(chan struct{})}
	p.more = sync.NewCond(&p.lmu)
	p.pod = p.header.Manifest.Pod
	if p.pod == nil {
		p.pod = &corev1.Pod{}
	}
	p.start = podstate.New(p.pod, func() time.Time { return p.header.Recorded }).Snapshot()
	p.start.Events = nil
	p.keepEvery = max(64, len(p.pod.Spec.InitContainers)+len(p.pod.Spec.Containers)+len(p.pod.Spec.EphemeralContainers))
	p.plans = [][]entry{nil}
	go p.load(rd)
	return p, nil
}

// load reads the events after the header.
func (p *Player) load(rd *record.Reader) {
	var started *record.StepStarted
	pod := p.start
	kept := 0 // runs since the last whole pod kept
	defer func() {
		p.lmu.Lock()
		p.planAt = append(p.planAt, len(p.plans)-1)
		if p.damage != nil {
			p.tail = started
		}
		close(p.done)
		p.more.Broadcast()
		p.lmu.Unlock()
	}()
	for {
		ev, err := rd.Next()
		p.lmu.Lock()
		if p.stop {
			p.lmu.Unlock()
			return
		}
		switch {
		case errors.Is(err, io.EOF):
			p.lmu.Unlock()
			return
		case err != nil:
			p.damage = err
			p.lmu.Unlock()
			return
		case ev.Plan != nil:
			p.applyPlan(ev.Plan)
		case ev.StepStarted != nil:
			started = ev.StepStarted
		case ev.Step != nil:
			rn := run{step: stepOf(ev.Step), plan: len(p.plans) - 1}
			if plan := p.plans[rn.plan]; rn.step.ID <= len(plan) && plan[rn.step.ID-1].step.Name == rn.step.Name {
				rn.step.Explain = plan[rn.step.ID-1].step.Explain // not in the step object
			}
			if started != nil && started.ID == ev.Step.ID {
				rn.requests = requestsOf(started.Requests)
			}
			started = nil
			kept++
			if pj := ev.Step.Pod; pj != nil {
				prev := pod
				pod = podstate.Snapshot{Status: pj.Status, Display: pj.Display, Ready: pj.Ready, Restarts: pj.Restarts}
				if ev.Step.Changes == nil {
					// A recording from before steps had Changes: the engine's
					// own diff of the pod before and after.
					rn.step.Changes = podstate.Diff(prev, pod)
				}
				// The Reader folded a pod_delta into ev.Step.Pod and left it.
				if ev.Step.PodDelta == nil || kept >= p.keepEvery || len(p.runs) == 0 {
					rn.pod, kept = pj, 0
				} else {
					rn.delta = ev.Step.PodDelta
				}
			}
			p.events = append(p.events, ev.Step.Events...)
			rn.events, rn.logs = len(p.events), len(p.logs)
			p.planAt = append(p.planAt, rn.plan)
			p.runs = append(p.runs, rn)
			p.more.Broadcast()
		case ev.Log != nil:
			p.logs = append(p.logs, *ev.Log)
			if n := len(p.runs); n > 0 {
				p.runs[n-1].logs = len(p.logs)
			}
		case ev.Summary != nil:
			p.summary = ev.Summary
		}
		p.lmu.Unlock()
	}
}

// need waits, lmu held, until n steps are read or the recording is.
func (p *Player) need(n int) {
	for len(p.runs) < n && !p.loaded() {
		p.more.Wait()
	}
}

func (p *Player) loaded() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Loaded is closed once the whole recording is read.
func (p *Player) Loaded() <-chan struct{} { return p.done }

// Close stops reading the recording and waits until the reader stopped.
func (p *Player) Close() {
	p.lmu.Lock()
	p.stop = true
	p.lmu.Unlock()
	<-p.done
}

// planIdx is the plan version at pos (the latest while it is being read).
func (p *Player) planIdx(pos int) int {
	if pos < len(p.planAt) {
		return p.planAt[pos]
	}
	return len(p.plans) - 1
}

// applyPlan makes a new plan version: the last one up to From, then the
// line's steps.
func (p *Player) applyPlan(pl *record.Plan) {
	prev := p.plans[len(p.plans)-1]
	keep := min(pl.From-1, len(prev))
	next := make([]entry, keep, keep+len(pl.Steps))
	copy(next, prev[:keep])
	for _, s := range pl.Steps {
		st := steps.Step{ID: s.ID, Stage: s.Stage, Kind: steps.KindOf(s.Name), Name: s.Name, Title: s.Title, Container: s.Container,
			Mirrors: s.Mirrors, Explain: s.Explain, State: steps.Pending, Requests: requestsOf(s.Requests)}
		if s.State == steps.Skipped {
			st.State = steps.Skipped
		}
		next = append(next, entry{step: st, since: len(p.runs)})
	}
	p.plans = append(p.plans, next)
}

// stepOf rebuilds a finished step from its JSON object.
func stepOf(j *report.StepJSON) steps.Step {
	s := steps.Step{ID: j.ID, Stage: j.Stage, Kind: steps.KindOf(j.Name), Name: j.Name, Title: j.Title, Container: j.Container, Mirrors: j.Mirrors,
		State: j.State, Started: j.Started, Duration: msDuration(j.DurationMs), Changes: j.Changes, Events: j.Events,
		Result: steps.Result{Summary: j.Summary, Details: j.Details, Warnings: j.Warnings, Reason: j.Reason, Message: j.Message, RestsOn: j.RestsOn}}
	if j.State == steps.Failed {
		s.Result.Err = errors.New(j.Message)
	}
	for i, c := range j.Calls {
		call := cri.Call{Seq: i + 1, Method: c.Method, Request: newMsg(c.Method, "Request", c.Request),
			Response: newMsg(c.Method, "Response", c.Response), Start: c.Started, Duration: msDuration(c.DurationMs)}
		if code := codeOf(c.Code); code != codes.OK || c.Error != "" {
			call.Err = status.Error(code, c.Error)
		}
		s.Calls = append(s.Calls, call)
	}
	return s
}

func requestsOf(rs []report.RequestJSON) []steps.Request {
	if len(rs) == 0 {
		return nil
	}
	out := make([]steps.Request, len(rs))
	for i, r := range rs {
		out[i] = steps.Request{Method: r.Method, Note: r.Note, Message: newMsg(r.Method, "Request", r.Request)}
	}
	return out
}

// codeOf parses a gRPC code as Code.String writes it ("NotFound").
func codeOf(s string) codes.Code {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == s {
			return c
		}
	}
	if s == "" {
		return codes.OK
	}
	return codes.Unknown
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Header is the recording's header.
func (p *Player) Header() record.Header { return p.header }

// Summary is the recording's summary line (nil when it was cut off before).
func (p *Player) Summary() *report.Summary {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.summary
}

// Damage says why the recording ends before its summary (a
// *record.DamageError), nil when it was read whole.
func (p *Player) Damage() error {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.damage
}

// Len is the number of steps the recording ran (read so far, until Loaded).
func (p *Player) Len() int {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return len(p.runs)
}

// Position is the number of steps run so far.
func (p *Player) Position() int { return p.pos }

// Seek moves to the state after the first pos steps ran (clamped to 0..Len).
func (p *Player) Seek(pos int) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	p.need(pos)
	p.pos = max(0, min(pos, len(p.runs)))
}

// RunID is the ID of the step that ran at position pos (1..Len), 0 if none.
func (p *Player) RunID(pos int) int {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	if pos < 1 || pos > len(p.runs) {
		return 0
	}
	return p.runs[pos-1].step.ID
}

// Find is the position right after step id first ran.
func (p *Player) Find(id int) (int, bool) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	for i := 0; ; i++ {
		p.need(i + 1)
		if i >= len(p.runs) {
			return 0, false
		}
		if p.runs[i].step.ID == id {
			return i + 1, true
		}
	}
}

// Pod is the pod being created, from the recording's header.
func (p *Player) Pod() *corev1.Pod { return p.pod }

// Steps is the plan at the position, each step in its state then.
func (p *Player) Steps() []steps.Step {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	p.need(p.pos + 1) // the plan at pos is known once the next step is read
	plan := p.plans[p.planIdx(p.pos)]
	pos := p.pos
	out := make([]steps.Step, len(plan))
	for i := range plan {
		out[i] = plan[i].step
	}
	for r := 0; r < pos; r++ {
		id := p.runs[r].step.ID
		if id >= 1 && id <= len(plan) && r+1 > plan[id-1].since {
			out[id-1] = p.runs[r].step
		}
	}
	return out
}

// NextStep is the step the recording ran next, with the exact requests it sent.
func (p *Player) NextStep() (steps.Step, bool) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.nextStep()
}

func (p *Player) nextStep() (steps.Step, bool) {
	p.need(p.pos + 1)
	var rn run
	switch {
	case p.pos < len(p.runs):
		rn = p.runs[p.pos]
	case p.tail != nil:
		rn = run{step: steps.Step{ID: p.tail.ID, Name: p.tail.Name}, requests: requestsOf(p.tail.Requests)}
	default:
		return steps.Step{}, false
	}
	s := rn.step
	if plan := p.plans[p.planIdx(p.pos)]; s.ID >= 1 && s.ID <= len(plan) {
		s = plan[s.ID-1].step
	}
	s.State, s.Calls, s.Result = steps.Pending, nil, steps.Result{}
	if rn.requests != nil {
		s.Requests = rn.requests
	}
	return s, true
}

// Failed is the step the pod failed at, when the run had stopped on it at
// this position: a failed step followed only by teardown, or by its own
// retry. A failure the kubelet recovers from (a container exit, then its
// restart) is not one.
func (p *Player) Failed() (steps.Step, bool) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.failed()
}

func (p *Player) failed() (steps.Step, bool) {
	r := p.pos
	for r > 0 && p.runs[r-1].step.Stage == steps.StageTeardown && p.runs[r-1].step.State != steps.Failed {
		r--
	}
	if r == 0 || p.runs[r-1].step.State != steps.Failed {
		return steps.Step{}, false
	}
	failed := p.runs[r-1].step
	for i := p.pos; ; i++ {
		p.need(i + 1)
		if i >= len(p.runs) {
			break
		}
		if rn := p.runs[i]; rn.step.Stage != steps.StageTeardown {
			if rn.step.ID != failed.ID {
				return steps.Step{}, false
			}
			break
		}
	}
	return failed, true
}

// PodState is the pod after the steps run so far.
func (p *Player) PodState() podstate.Snapshot { return p.PodAt(p.pos) }

// PodAt is the pod after the first pos steps (the pod before any at 0).
func (p *Player) PodAt(pos int) podstate.Snapshot {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	pos = max(0, min(pos, len(p.runs)))
	if pos == 0 {
		return p.start
	}
	rn := p.runs[pos-1]
	s := p.start
	// The last whole pod kept at or before pos, then the deltas since.
	from := pos - 1
	for from >= 0 && p.runs[from].pod == nil {
		from--
	}
	var base *report.PodJSON
	if from >= 0 {
		base = p.runs[from].pod
	}
	var ds []*report.PodDelta
	for i := from + 1; i < pos; i++ {
		if d := p.runs[i].delta; d != nil {
			ds = append(ds, d)
		}
	}
	if base == nil && len(ds) > 0 {
		base = &report.PodJSON{Phase: s.Status.Phase, Display: s.Display, Ready: s.Ready, Restarts: s.Restarts, Status: s.Status}
	}
	if len(ds) > 0 {
		// The Reader applied the same deltas one by one: they fit.
		if pod, err := report.ApplyAll(base, ds); err == nil {
			base = pod
		}
	}
	if base != nil {
		s = podstate.Snapshot{Status: base.Status, Display: base.Display, Ready: base.Ready, Restarts: base.Restarts}
	}
	s.Events = p.events[:rn.events:rn.events]
	return s
}

// Next moves one step forward, telling subscribers as a live step would.
func (p *Player) Next(ctx context.Context) (steps.Step, error) {
	p.lmu.Lock()
	next, ok := p.nextStep()
	if !ok || p.pos >= len(p.runs) {
		p.lmu.Unlock()
		return steps.Step{}, steps.ErrNoStep
	}
	p.pos++
	done := p.runs[p.pos-1].step
	p.lmu.Unlock()
	next.State = steps.Running
	p.emit(steps.Event{Kind: steps.StepStarted, Step: next})
	for i := range done.Calls {
		c := done.Calls[i]
		p.emit(steps.Event{Kind: steps.CallDone, Step: next, Call: &c})
	}
	pod := p.PodState()
	p.emit(steps.Event{Kind: steps.StepDone, Step: done, Pod: &pod})
	return done, ctx.Err()
}

// Continue moves forward to the next breakpoint, the step the pod failed
// at, or the end, as a live run continues.
func (p *Player) Continue(ctx context.Context) error {
	first := true
	for p.left() && (first || !p.breakAt(p.pos)) {
		first = false
		if _, err := p.Next(ctx); err != nil {
			return err
		}
		if f, failed := p.Failed(); failed && f.ID == p.RunID(p.pos) {
			return nil // the pod failed here: the run stopped
		}
	}
	return nil
}

// ContinueBack moves back to the latest position before the current one
// where a breakpoint stops the run, or to the start.
func (p *Player) ContinueBack() {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	pos := p.pos - 1
	for pos > 0 && !p.breakAtLocked(pos) {
		pos--
	}
	p.pos = max(pos, 0)
}

// breakAt says whether a breakpoint stops the run at position pos, before
// the step that ran next.
func (p *Player) breakAt(pos int) bool {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	return p.breakAtLocked(pos)
}

// left says whether a step is left to run (waiting for it to be read).
func (p *Player) left() bool {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	p.need(p.pos + 1)
	return p.pos < len(p.runs)
}

func (p *Player) breakAtLocked(pos int) bool {
	p.need(pos + 1)
	if pos >= len(p.runs) {
		return false
	}
	id := p.runs[pos].step.ID
	if p.stepBrk[id] {
		return true
	}
	plan := p.plans[p.planIdx(pos)]
	if id < 1 || id > len(plan) {
		return false
	}
	st := plan[id-1].step.Stage
	return p.stageBrk[st] && (id == 1 || plan[id-2].step.Stage != st)
}

// Retry is refused: a replay cannot change what the run did.
func (p *Player) Retry() error { return ErrRetry }

// ToggleBreakStage sets or clears a breakpoint before a stage's first step.
func (p *Player) ToggleBreakStage(st steps.Stage) bool {
	p.stageBrk[st] = !p.stageBrk[st]
	return p.stageBrk[st]
}

// ToggleBreakStep sets or clears a breakpoint before step id.
func (p *Player) ToggleBreakStep(id int) bool {
	p.stepBrk[id] = !p.stepBrk[id]
	return p.stepBrk[id]
}

// ContainerLog is the end of a container's log as recorded up to the
// position: the lines of its latest attempt.
func (p *Player) ContainerLog(name string, max int) ([]steps.LogLine, error) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	n := 0
	if p.pos > 0 {
		n = p.runs[p.pos-1].logs
	}
	// The latest attempt's file, as the live engine reads: <attempt>.log
	// of the container last created.
	attempt := p.created(name) - 1
	for _, l := range p.logs[:n] {
		if l.Container == name && l.Attempt > attempt {
			attempt = l.Attempt
		}
	}
	if attempt < 0 {
		return nil, steps.ErrNoContainer
	}
	lines := []steps.LogLine{}
	for _, l := range p.logs[:n] {
		if l.Container == name && l.Attempt == attempt {
			lines = append(lines, steps.LogLine{Stream: l.Stream, Text: l.Line})
		}
	}
	if max > 0 && len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	return lines, nil
}

// created is how many times container name was created by the position.
func (p *Player) created(name string) int {
	n := 0
	for _, rn := range p.runs[:p.pos] {
		if rn.step.Container != name {
			continue
		}
		for _, c := range rn.step.Calls {
			if c.Method == "CreateContainer" && c.Err == nil {
				n++
			}
		}
	}
	return n
}

// Subscribe calls fn with the events Next and Continue make, until cancel.
func (p *Player) Subscribe(fn func(steps.Event)) (cancel func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &fn
	p.subs = append(p.subs, f)
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, s := range p.subs {
			if s == f {
				p.subs = append(p.subs[:i:i], p.subs[i+1:]...)
				return
			}
		}
	}
}

func (p *Player) emit(ev steps.Event) {
	p.mu.Lock()
	subs := p.subs
	p.mu.Unlock()
	for _, f := range subs {
		(*f)(ev)
	}
}

// String names the position, for messages.
func (p *Player) String() string { return fmt.Sprintf("step %d/%d", p.pos, p.Len()) }
