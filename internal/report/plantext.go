package report

import (
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// WritePlan writes `podstep plan`'s output of the pod's steps: yaml (the
// steps with their kubelet function, explanation and CRI requests, as
// commented YAML) or json (one PlanStepJSON per line, as a recording's plan).
//
// notes (manifest.Bundle.Notes: the workload rules that made the pod, the
// skipped documents) head the YAML and go in the first step's JSON; stops
// are where a run will stop (Engine.Stops): the text says so at the top and
// under each such step, the JSON in the step's "stops".
func WritePlan(w io.Writer, pod *corev1.Pod, all []steps.Step, output string, notes []string, stops ...steps.Stop) error {
	at := map[int][]steps.Stop{}
	for _, st := range stops {
		at[st.Step] = append(at[st.Step], st)
	}
	if output == "json" {
		// One object per step: PlanStepJSON, as a recording's plan lists it.
		enc := json.NewEncoder(w)
		for i, s := range all {
			ps := PlanStep(s)
			ps.Stops = at[s.ID]
			if i == 0 {
				ps.Notes = notes
			}
			if err := enc.Encode(ps); err != nil {
				return fmt.Errorf("write the plan: %w", err)
			}
		}
		return nil
	}
	fmt.Fprintf(w, "# podstep plan for pod %s/%s (uid %s)\n# no runtime contacted; <...> are values the runtime will give\n", pod.Namespace, pod.Name, pod.UID)
	for _, n := range notes {
		for i, line := range render.Wrap(safe.Line(n), 94) {
			if i == 0 {
				fmt.Fprintf(w, "# - %s\n", line)
			} else {
				fmt.Fprintf(w, "#   %s\n", line)
			}
		}
	}
	if len(stops) > 0 {
		st := stops[0]
		fmt.Fprintf(w, "# the run will stop at step %d (%s): %s: %s\n", st.Step, st.Name, st.Reason, st.Message)
		if len(stops) > 1 {
			fmt.Fprintf(w, "# (%d problems in all: see the steps marked ✗)\n", len(stops))
		}
	}
	var stage steps.Stage
	for _, s := range all {
		if s.Stage != stage {
			stage = s.Stage
			fmt.Fprintf(w, "\n## stage %s\n", stage)
		}
		fmt.Fprintf(w, "\n### %d. %s  [%s]\n# kubelet: %s\n", s.ID, s.Title, s.Name, s.Mirrors)
		for _, line := range render.Wrap(s.Explain, 96) {
			fmt.Fprintf(w, "# %s\n", line)
		}
		for _, st := range at[s.ID] {
			for _, line := range render.Wrap("✗ the run will stop here: "+st.Reason+": "+st.Message, 96) {
				fmt.Fprintf(w, "# %s\n", line)
			}
			if st.Hint != "" {
				for _, line := range render.Wrap("to go on: "+st.Hint, 96) {
					fmt.Fprintf(w, "# %s\n", line)
				}
			}
		}
		if len(s.Requests) == 0 {
			fmt.Fprintln(w, "# (no CRI call: the kubelet does this itself)")
		}
		for _, r := range s.Requests {
			note := ""
			if r.Note != "" {
				note = "  # " + r.Note
			}
			fmt.Fprintf(w, "%s:%s\n", r.Method, note)
			if r.Message == nil {
				continue
			}
			for _, l := range render.ProtoYAML(r.Message) {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	return nil
}
