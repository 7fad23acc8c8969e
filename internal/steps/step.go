package steps

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/podstate"
)

// Step is one thing the kubelet does while creating the pod. Before it runs
// it says what it will do and which CRI requests it will send; after, what
// happened and the pod's state.
type Step struct {
	// ID is the step's 1-based position in the plan.
	ID int `json:"id"`
	// Stage is the stage the step belongs to.
	Stage Stage `json:"stage"`
	// Kind says what the step does; its name is made from it.
	Kind Kind `json:"-"`
	// Name is a short stable name, e.g. "run-sandbox" or "create/app":
	// Kind.String(), then "/<container>" for a per-container kind.
	Name string `json:"name"`
	// Title is one line for humans.
	Title string `json:"title"`
	// Container is the container the step is about, if any.
	Container string `json:"container,omitempty"`
	// Mirrors names the kubelet function and file the step mirrors.
	Mirrors string `json:"mirrors"`
	// Explain says in plain words what the kubelet does here.
	Explain string `json:"explain"`
	// Requests are the CRI requests the step will send, built from what is
	// known now (IDs that earlier steps will learn are placeholders).
	Requests []Request `json:"-"`

	// State is pending, running, done, failed or skipped.
	State State `json:"state"`
	// Calls are the CRI calls the step sent, in order.
	Calls []cri.Call `json:"-"`
	// Result says what happened.
	Result Result `json:"result"`
	// Started and Duration time the step.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// Pod is the pod's state after the step ran: on the Step of its
	// StepDone event, and in Steps only with Options.KeepPods (a snapshot
	// kept per step would make memory quadratic in the containers).
	Pod *podstate.Snapshot `json:"-"`
	// Changes are what the step changed in the pod's state
	// (podstate.Diff of the pod before the step and Pod); nil when nothing
	// changed. The engine computes them once, as the step finishes, so
	// every frontend shows the same diff.
	Changes []podstate.Change `json:"changes,omitempty"`
	// Events are the kubelet events recorded while the step ran, oldest
	// first (podstate.NewEvents of the same two snapshots); nil when none.
	Events []podstate.Event `json:"events,omitempty"`

	act action
}

// Request is one CRI request a step will send.
type Request struct {
	Method string
	// Message is the request; nil when it cannot be built yet (see Note).
	Message proto.Message
	// Note qualifies the request, e.g. "only if the image is not present".
	Note string
}

// Result is what a step found, modelled on the kubelet's SyncResult: a short
// reason users see in pod status or events (ErrImagePull,
// CreateContainerError, ...) plus a human message.
type Result struct {
	// Summary is one line saying what happened.
	Summary string `json:"summary"`
	// Details are "key: value" facts the step found (IDs, IP, exit code, checks).
	Details []Detail `json:"details,omitempty"`
	// Warnings are kubelet warnings the step raised that did not fail it.
	Warnings []string `json:"warnings,omitempty"`
	// Reason is the kubelet's reason when the step failed.
	Reason string `json:"reason,omitempty"`
	// Message is the error message when the step failed (the runtime's own text for CRI errors).
	Message string `json:"message,omitempty"`
	// RestsOn says, on the simulated runtime, what the step's verdict rests
	// on when that is not what a real runtime would find: what the simulator
	// read of a container's command ("script: exits 0 after `echo done`"),
	// or what it assumed ("assumed: ..."); see sim.Decide. Nil elsewhere.
	RestsOn []string `json:"rests_on,omitempty"`
	// Explanation is the known failure the step's matches (internal/explain:
	// what failed, likely causes, what the kubelet does next, how to confirm,
	// the fix); nil when the step succeeded or no entry matches.
	Explanation *explain.Explanation `json:"explanation,omitempty"`
	// Err is the failure, nil when the step succeeded.
	Err error `json:"-"`
}

// Detail is one fact a step reports.
type Detail struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// action is a step's behaviour.
type action interface {
	// kind is the kind of the steps that run this action.
	kind() Kind
	// requests builds the CRI requests the step will send, from what the
	// engine knows now. It has no side effects.
	requests(e *Engine) []Request
	// run performs the step.
	run(ctx context.Context, e *Engine) Result
	// mirrors names the kubelet v1.37 function the step mirrors (and its
	// file); explain says what the kubelet does there. Every action must
	// say both: the plan shows them (Kind.Mirrors is the one definition).
	mirrors() string
	explain() string
}

// fail builds a failed Result with the kubelet's reason.
func fail(reason string, err error, summary string) Result {
	return Result{Summary: summary, Reason: reason, Message: cri.Message(unwrapCRI(err)), Err: err}
}

func unwrapCRI(err error) error {
	if ce, ok := err.(*cri.Error); ok {
		return ce.Err
	}
	return err
}

// ok builds a successful Result.
func ok(summary string, details ...Detail) Result {
	return Result{Summary: summary, Details: details}
}

func kv(k, v string) Detail { return Detail{Key: k, Value: v} }

// RestsOn gathers what the verdicts of steps rest on (Result.RestsOn), in
// order, each once, as "CONTAINER: what" for a container's step: what a
// run's summary says it rests on. Nil when nothing does (a real runtime).
func RestsOn(steps []Step) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range steps {
		for _, r := range s.Result.RestsOn {
			if s.Container != "" {
				r = s.Container + ": " + r
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// unwrapCRIMessage is the runtime's own text for err.
func unwrapCRIMessage(err error) string { return cri.Message(unwrapCRI(err)) }

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }
