package predict

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

// asks is what to ask about a step of each kind: how it ends where steps
// of the kind fail in the scenarios, the first CRI call where the call is
// the lesson, the pod's STATUS elsewhere.
func asks(k steps.Kind) string {
	switch k {
	case steps.KindAdmit, steps.KindCreate, steps.KindPostStart, steps.KindWaitInit, steps.KindRelist, steps.KindBackoff, steps.KindRunSandbox:
		return AskEnd
	case steps.KindRuntimeStatus, steps.KindSandboxStatus, steps.KindPull, steps.KindStart, steps.KindImageVolumes, steps.KindReset:
		return AskCall
	}
	return AskStatus
}

// endReasons are the plausible ways a step of each kind fails.
var endReasons = map[steps.Kind][]string{
	steps.KindAdmit:      {reason.InsufficientResourcePrefix + "cpu", reason.InsufficientResourcePrefix + "memory", reason.NodeAffinity, reason.TaintToleration, reason.NodePorts, reason.SysctlForbidden},
	steps.KindCreate:     {reason.ErrCreateContainerConfig, reason.ErrCreateContainer},
	steps.KindPostStart:  {reason.ErrPostStartHook},
	steps.KindWaitInit:   {reason.Error, reason.Completed},
	steps.KindRelist:     {reason.Error, reason.Completed},
	steps.KindBackoff:    {reason.ErrCrashLoopBackOff},
	steps.KindRunSandbox: {reason.ErrCreatePodSandbox},
}

// callPool are CRI calls to draw distractors from.
var callPool = []string{"RunPodSandbox", "ImageStatus", "PullImage", "CreateContainer", "StartContainer", "ContainerStatus", "ListContainers", "PodSandboxStatus", "Status", "Version", "StopContainer", NoCall}

// statusPool are STATUS values to draw distractors from.
var statusPool = []string{"Pending", "ContainerCreating", "Running", "Error", "CrashLoopBackOff", "Completed", "PodInitializing"}

// NewQuestion builds the question about s, the step about to run (status
// is the pod's STATUS now; sc the scenario the pod is, or nil): the
// choices the plan points to first (its first request, the scenario's
// outcome, STATUS now), then distractors, four at most, in an order fixed
// by the step (so a replay asks the same question).
func NewQuestion(s steps.Step, status string, sc *scenario.Scenario) *Question {
	qu := &Question{Step: s, Asks: asks(s.Kind), Picked: -1}
	var first, pool []string
	switch qu.Asks {
	case AskCall:
		qu.Prompt = "which CRI call does it send first?"
		if len(s.Requests) > 0 {
			first = append(first, short(s.Requests[0].Method))
		} else {
			first = append(first, NoCall)
		}
		pool = callPool
	case AskStatus:
		qu.Prompt = "what will STATUS (kubectl get pod) read after it?"
		first = append(first, status)
		if sc != nil {
			first = append(first, sc.Expect.Display)
		}
		pool = statusPool
	default:
		qu.Prompt = "how does it end?"
		first = append(first, Succeeds)
		if sc != nil && sc.Expect.Step == s.Name {
			first = append(first, sc.Expect.Reason)
		}
		pool = endReasons[s.Kind]
	}
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(s.ID)))
	choices := []string{}
	add := func(c string) {
		if c != "" && !slices.Contains(choices, c) && len(choices) < 4 {
			choices = append(choices, c)
		}
	}
	for _, c := range first {
		add(c)
	}
	for _, i := range rng.Perm(len(pool)) {
		add(pool[i])
	}
	rng.Shuffle(len(choices), func(i, j int) { choices[i], choices[j] = choices[j], choices[i] })
	qu.Choices = choices
	return qu
}
