package record

import (
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// planKey is what a plan line must be rewritten for when it changes: the
// step's name, title and whether it was skipped. Running and finishing a
// step changes nothing here: step lines say that.
func planKey(s steps.Step) string {
	k := s.Name + "\x00" + s.Title
	if s.State == steps.Skipped {
		k += "\x00skipped"
	}
	return k
}

// checkPlan writes a plan line for the part of the plan that changed since
// the last one: the steps from the first that differs to the end.
func (r *Recorder) checkPlan(now []steps.Step) {
	same := 0
	for same < len(now) && same < len(r.plan) && planKey(now[same]) == r.plan[same] {
		same++
	}
	if same == len(now) && same == len(r.plan) {
		return
	}
	r.plan = r.plan[:same]
	p := Plan{Type: TypePlan, From: same + 1, Steps: make([]report.PlanStepJSON, 0, len(now)-same)}
	for _, s := range now[same:] {
		p.Steps = append(p.Steps, report.PlanStep(s))
		r.plan = append(r.plan, planKey(s))
	}
	r.line(p)
}
