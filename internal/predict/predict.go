// Package predict is podstep's predict mode (run --predict, replay
// --predict): before a step runs it asks what comes next (the first CRI
// call, the pod's STATUS after it, or how the step ends) as multiple choice,
// reads the answer, lets the step run, then says right or wrong with the
// step's explanation (what the kubelet does, the function it mirrors, and a
// scenario's lesson at the step the scenario is about). A score ends it.
//
// It is a frontend: it reads a step before it runs (NextStep) and grades on
// the engine's StepDone event (Observe), for a live engine or a recording's
// player alike.
package predict

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

// Engine is what predict mode drives: *steps.Engine and a replay.Player.
type Engine interface {
	NextStep() (steps.Step, bool)
	Next(ctx context.Context) (steps.Step, error)
	Subscribe(fn func(steps.Event)) (cancel func())
}

// What a question asks.
const (
	AskCall   = "call"   // the first CRI call the step sends
	AskStatus = "status" // the pod's STATUS column after the step
	AskEnd    = "end"    // how the step ends: succeeds, or the kubelet's reason
)

// Succeeds is the choice of a step that does not fail; NoCall that of a
// step that sends no CRI call.
const (
	Succeeds = "it succeeds"
	NoCall   = "no CRI call"
)

// Options configure a Quiz.
type Options struct {
	In  io.Reader // the answers, one a line
	Out io.Writer // questions and verdicts
	// Echo writes each answer after the prompt, for answers that do not
	// come from a terminal (which echoes them itself).
	Echo bool
	// Scenario, when the pod is a built-in scenario, adds its outcome to
	// the choices and its lesson to the explanation of the step it is about.
	Scenario *scenario.Scenario
}

// Question is one multiple-choice question about the step about to run.
type Question struct {
	Step    steps.Step
	Asks    string // AskCall, AskStatus or AskEnd
	Prompt  string
	Choices []string
	Picked  int // the index answered, -1 for none
}

// Quiz asks, reads and grades; its zero value is not usable (New).
type Quiz struct {
	o       Options
	in      *bufio.Reader
	pending *Question
	stopped bool // q or the end of the answers: the run goes on without questions
	Score
}

// Score is a quiz's tally: Asked counts graded questions, Right the right
// answers; Unknowable those whose answer was none of the choices (not
// counted).
type Score struct {
	Asked, Right, Unknowable int
}

// Add counts one verdict.
func (sc *Score) Add(v Verdict) {
	switch {
	case v.Unknowable:
		sc.Unknowable++
	case v.Right:
		sc.Asked++
		sc.Right++
	default:
		sc.Asked++
	}
}

// String is the score line: "predict: 3 of 4 right" ("" before any question).
func (sc Score) String() string {
	if sc.Asked+sc.Unknowable == 0 {
		return ""
	}
	s := fmt.Sprintf("predict: %d of %d right", sc.Right, sc.Asked)
	if sc.Unknowable > 0 {
		s += fmt.Sprintf(" (%d more the plan could not tell)", sc.Unknowable)
	}
	return s
}

// New is a Quiz reading answers from o.In.
func New(o Options) *Quiz {
	return &Quiz{o: o, in: bufio.NewReader(o.In)}
}

// Run drives e one step at a time to its end (or ctx's): asks about each
// step, runs it, grades the answer. It subscribes q for as long as it runs;
// a frontend printing steps subscribes before, so the verdict follows the
// step's line.
func Run(ctx context.Context, e Engine, q *Quiz, status func() string) error {
	cancel := e.Subscribe(q.Observe)
	defer cancel()
	fin, hasFin := e.(interface{ Finished() bool })
	for ctx.Err() == nil && (!hasFin || !fin.Finished()) {
		s, ok := e.NextStep()
		if !ok {
			break
		}
		q.Ask(s, status())
		if _, err := e.Next(ctx); err != nil {
			if errors.Is(err, steps.ErrNoStep) {
				break
			}
			return err
		}
	}
	q.WriteScore()
	return nil
}

// Ask prints the question about s, the step about to run (status is the
// pod's STATUS now) and reads the answer; nothing once the answers ended.
func (q *Quiz) Ask(s steps.Step, status string) {
	if q.stopped || s.Stage == steps.StageTeardown {
		q.pending = nil
		return
	}
	qu := NewQuestion(s, status, q.o.Scenario)
	q.pending = qu
	fmt.Fprintf(q.o.Out, "\n? step %d %s (%s): %s\n", s.ID, s.Name, s.Stage, qu.Prompt)
	for i, c := range qu.Choices {
		fmt.Fprintf(q.o.Out, "    %c) %s\n", 'a'+i, c)
	}
	// Until an answer, q, or the end of the answers: an entry that is no
	// choice is asked again, never graded.
	for {
		fmt.Fprintf(q.o.Out, "  your answer (a-%c, q stops asking): ", 'a'+len(qu.Choices)-1)
		line, err := q.in.ReadString('\n')
		ans := strings.ToLower(strings.TrimSpace(line))
		if q.o.Echo && ans != "" {
			fmt.Fprintln(q.o.Out, ans)
		}
		switch {
		case ans == "q" || (err != nil && ans == ""):
			fmt.Fprintln(q.o.Out)
			fmt.Fprintln(q.o.Out, "  (no more questions: the run goes on)")
			q.stopped, q.pending = true, nil
			return
		case len(ans) == 1 && ans[0] >= 'a' && int(ans[0]-'a') < len(qu.Choices):
			qu.Picked = int(ans[0] - 'a')
			return
		case len(ans) == 1 && ans[0] >= '1' && int(ans[0]-'1') < len(qu.Choices):
			qu.Picked = int(ans[0] - '1')
			return
		}
		fmt.Fprintf(q.o.Out, "  %s is not a choice: type one letter, a to %c (q stops asking)\n", quoteAnswer(ans), 'a'+len(qu.Choices)-1)
	}
}

// quoteAnswer shows an answer that is no choice, quoted, cut to a line.
func quoteAnswer(ans string) string {
	if r := []rune(ans); len(r) > 20 {
		ans = string(r[:20]) + "…"
	}
	return fmt.Sprintf("%q", ans)
}

// Observe grades the pending question when its step is done (subscribe it
// to the engine).
func (q *Quiz) Observe(ev steps.Event) {
	qu := q.pending
	if ev.Kind != steps.StepDone || qu == nil || ev.Step.ID != qu.Step.ID {
		return
	}
	q.pending = nil
	if qu.Picked < 0 {
		return // not answered: not graded
	}
	v := Grade(qu, ev, q.o.Scenario)
	q.Add(v)
	for _, l := range v.Lines() {
		fmt.Fprintf(q.o.Out, "  %s\n", l)
	}
}

// Verdict is a graded question: what the step did and whether the answer
// said it, with the step's explanation and, at the step a scenario is
// about, its lesson.
type Verdict struct {
	Asks       string // what the question asked (AskCall, AskStatus, AskEnd)
	Got        string // what it turned out to be
	You        string // the answer given ("" none)
	Right      bool
	Unknowable bool // Got was none of the choices
	Explain    string
	Mirrors    string
	// Lesson is the scenario's lesson, when the step failed as the
	// scenario expects: its name, what goes wrong, the kubelet function
	// that decides it, the fix.
	Lesson *Lesson
}

// Lesson is a scenario's lesson as a verdict says it.
type Lesson struct {
	Scenario, Wrong, Kubelet, Fix string
}

// Grade grades qu on its step's StepDone event ev; sc is the scenario the
// pod is, or nil.
func Grade(qu *Question, ev steps.Event, sc *scenario.Scenario) Verdict {
	v := Verdict{Asks: qu.Asks, Got: answer(qu.Asks, ev), Explain: ev.Step.Explain, Mirrors: ev.Step.Mirrors}
	idx := -1
	for i, c := range qu.Choices {
		if c == v.Got {
			idx = i
		}
	}
	if qu.Picked >= 0 && qu.Picked < len(qu.Choices) {
		v.You = qu.Choices[qu.Picked]
	}
	v.Unknowable = idx < 0
	v.Right = idx >= 0 && qu.Picked == idx
	if sc != nil && sc.Expect.Step == ev.Step.Name && ev.Step.State == steps.Failed && ev.Step.Result.Reason == sc.Expect.Reason {
		l := sc.Lesson
		v.Lesson = &Lesson{Scenario: sc.Name, Wrong: l.Wrong, Kubelet: l.Kubelet.String(), Fix: l.Fix}
	}
	return v
}

// Outcome says in plain words what the step turned out to do, as the
// question asked it: "the step succeeded", "the step failed: OutOfcpu",
// "the first CRI call was RunPodSandbox", "STATUS became Running".
func (v Verdict) Outcome() string {
	switch v.Asks {
	case AskCall:
		if v.Got == NoCall {
			return "the step sent no CRI call"
		}
		return "the first CRI call was " + v.Got
	case AskStatus:
		return "STATUS became " + v.Got
	}
	if v.Got == Succeeds {
		return "the step succeeded"
	}
	return "the step failed: " + v.Got
}

// Lines is the verdict as --auto prints it, one line each, unindented:
// right or wrong, why, the kubelet function, the lesson.
func (v Verdict) Lines() []string {
	var out []string
	what := v.Outcome()
	switch {
	case v.Unknowable:
		out = append(out, fmt.Sprintf("~ none of the choices: %s (the plan could not tell)", what))
	case v.Right:
		out = append(out, fmt.Sprintf("✓ right: %s", what))
	case v.You == "":
		out = append(out, fmt.Sprintf("✗ not answered: %s", what))
	default:
		out = append(out, fmt.Sprintf("✗ wrong: %s; your answer: %s", what, v.You))
	}
	if v.Explain != "" {
		out = append(out, "why: "+v.Explain)
	}
	if v.Mirrors != "" {
		out = append(out, "kubelet: "+v.Mirrors)
	}
	if l := v.Lesson; l != nil {
		out = append(out, fmt.Sprintf("lesson (%s): %s", l.Scenario, l.Wrong), "decided by "+l.Kubelet, "fix: "+l.Fix)
	}
	return out
}

// WriteScore prints the score.
func (q *Quiz) WriteScore() {
	if line := q.String(); line != "" {
		fmt.Fprintf(q.o.Out, "\n%s\n", line)
	}
}

// answer is what a question asked turned out to be, after the step.
func answer(asks string, ev steps.Event) string {
	switch asks {
	case AskCall:
		if len(ev.Step.Calls) == 0 {
			return NoCall
		}
		return short(ev.Step.Calls[0].Method)
	case AskStatus:
		if ev.Pod != nil {
			return ev.Pod.Display
		}
		if ev.Step.Pod != nil {
			return ev.Step.Pod.Display
		}
		return "?"
	}
	if ev.Step.State == steps.Failed && ev.Step.Result.Reason != "" {
		return ev.Step.Result.Reason
	}
	return Succeeds
}

// short is a CRI method's name without its service: "/runtime.v1.RuntimeService/RunPodSandbox" → "RunPodSandbox".
func short(method string) string {
	if i := strings.LastIndexByte(method, '/'); i >= 0 {
		return method[i+1:]
	}
	return method
}
