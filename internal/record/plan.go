package record

import (
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// planKey is what a plan line must be rewritten for when it changes: the
// step's name, title and whether it was skipped. Running and finishing a
// step changes nothing here: step lines say that.
type planKey struct {
	name, title string
	skipped     bool
}

func keyOf(s *steps.Step) planKey {
	return planKey{s.Name, s.Title, s.State == steps.Skipped}
}

// asRun is a Source that gives its plan without rebuilding the pending
// steps' requests (steps.Engine.StepsAsRun): what the check of the plan
// reads, before and after every step. Rebuilding them (Steps), each a
// walk of the pod, made a recording quadratic in the containers in time
// (issue 34); they are rebuilt only for a plan line.
type asRun interface {
	StepsAsRun() []steps.Step
}

// checkPlan writes a plan line for the part of the plan that changed since
// the last one: the steps from the first that differs to the end.
func (r *Recorder) checkPlan() {
	var now []steps.Step
	a, cheap := r.src.(asRun)
	if cheap {
		now = a.StepsAsRun()
	} else {
		now = r.src.Steps()
	}
	same := r.samePlan(now)
	if same == len(now) && same == len(r.plan) {
		return
	}
	if cheap {
		// The plan line has the pending steps' requests as Steps builds them.
		now = r.src.Steps()
		same = r.samePlan(now)
	}
	r.plan = r.plan[:same]
	p := Plan{Type: TypePlan, From: same + 1, Steps: make([]report.PlanStepJSON, 0, len(now)-same)}
	for i := range now[same:] {
		s := &now[same+i]
		p.Steps = append(p.Steps, report.PlanStep(*s))
		r.plan = append(r.plan, keyOf(s))
	}
	r.line(p)
}

// samePlan is how many steps at the start of now the last plan line has.
func (r *Recorder) samePlan(now []steps.Step) int {
	same := 0
	for same < len(now) && same < len(r.plan) && keyOf(&now[same]) == r.plan[same] {
		same++
	}
	return same
}
