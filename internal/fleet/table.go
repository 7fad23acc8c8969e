package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Report is the -o json object of a fleet: every node's result with its
// full step list (internal/report's step objects), and the analysis.
type Report struct {
	Type     string    `json:"type"` // "fleet"
	Pod      string    `json:"pod"`
	Nodes    []*Result `json:"nodes"`
	Analysis *Analysis `json:"analysis"`
}

// WriteJSON writes the report as one JSON object.
func WriteJSON(w io.Writer, pod string, results []*Result, a *Analysis) error {
	for _, r := range results {
		if r.Steps == nil {
			r.Steps = []report.StepJSON{}
		}
	}
	b, err := json.Marshal(Report{Type: "fleet", Pod: pod, Nodes: results, Analysis: a})
	if err != nil {
		return fmt.Errorf("fleet JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// tableStages are the stage columns, in the kubelet's order, teardown last.
func tableStages(results []*Result) []steps.Stage {
	seen := map[steps.Stage]bool{}
	for _, r := range results {
		for _, s := range r.Steps {
			seen[s.Stage] = true
		}
	}
	var out []steps.Stage
	for _, st := range append(append([]steps.Stage{}, steps.Stages...), steps.StageTeardown) {
		if seen[st] {
			out = append(out, st)
		}
	}
	return out
}

// WriteText writes the table (one row per node, in the fleet's node
// order), then the odd nodes, the outliers and the nodes that did not run.
func WriteText(w io.Writer, results []*Result, a *Analysis) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	stages := tableStages(results)
	head := []string{"NODE", "RUNTIME", "ENDPOINT", "KUBELET", "OUTCOME", "FAILED AT", "REASON"}
	for _, st := range stages {
		head = append(head, strings.ToUpper(string(st)))
	}
	head = append(head, "OWN", "WALL")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range results {
		row := []string{Clean(r.Node), orDash(r.Runtime), endpointText(r), orDash(r.Kubelet), r.Outcome(), "-", "-"}
		if f := r.Failure(); f != nil {
			row[5] = Clean(string(f.Stage) + "/" + f.Step)
			row[6] = Clean(f.Reason)
		} else if r.Status != Ran && r.Error != "" {
			row[6] = Clean(firstLine(r.Error, 60))
		}
		if r.StoppedFromOutside != "" {
			row[6] += " (stopped from outside)"
		}
		ms := r.StageMs()
		for _, st := range stages {
			if v, ok := ms[st]; ok {
				row = append(row, render.Ms(v))
			} else {
				row = append(row, "-")
			}
		}
		own := "-"
		if r.Summary != nil {
			own = render.Ms(r.Summary.Timing.OverheadMs)
		}
		wall := "-"
		if r.WallMs > 0 {
			wall = render.Ms(r.WallMs)
		}
		row = append(row, own, wall)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Groups) > 1 {
		m := a.Groups[0]
		fmt.Fprintf(w, "\nmajority (%d of %d nodes that ran): %s, %s\n", len(m.Nodes), ranCount(a), outcomeText(m), strings.Join(cleanAll(m.Nodes), ", "))
		for _, o := range a.Odd {
			writeOdd(w, o)
		}
	} else if len(a.Groups) == 1 {
		fmt.Fprintf(w, "\nevery node that ran took the same steps with the same outcomes (%s)\n", outcomeText(a.Groups[0]))
	}
	if len(a.Outliers) > 0 {
		fmt.Fprintf(w, "\nstage time outliers (%s):\n", a.OutlierRule)
		for _, o := range a.Outliers {
			fmt.Fprintf(w, "  %s: %s %s (median %s, MAD %s)\n", Clean(o.Node), o.Stage, render.Ms(o.Ms), render.Ms(o.MedianMs), render.Ms(o.MADMs))
		}
	}
	for _, r := range results {
		if r.StoppedFromOutside != "" {
			fmt.Fprintf(w, "\n%s: %s (%s)\n", Clean(r.Node), StoppedHint, Clean(r.StoppedFromOutside))
		}
	}
	for _, r := range results {
		if r.Status == Ran {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s", Clean(r.Node), r.Status)
		if r.Error != "" {
			fmt.Fprintf(w, ": %s", Clean(r.Error))
		}
		fmt.Fprintln(w)
		if len(r.LastLog) > 0 {
			fmt.Fprintf(w, "  its last log lines:\n")
			for _, l := range r.LastLog {
				fmt.Fprintf(w, "  | %s\n", Clean(l))
			}
		}
	}
	return nil
}

func writeOdd(w io.Writer, o Odd) {
	verb := "differs"
	if len(o.Nodes) > 1 {
		verb = "differ"
	}
	fmt.Fprintf(w, "odd: %s %s from %s at step %d:", strings.Join(cleanAll(o.Nodes), ", "), verb, Clean(o.Majority), o.Index+1)
	switch {
	case o.Step == nil:
		fmt.Fprintf(w, " they stop before %s\n", stepText(o.Their))
	case o.Their == nil:
		fmt.Fprintf(w, " %s, which %s does not take\n", stepText(o.Step), Clean(o.Majority))
	default:
		fmt.Fprintf(w, " %s where %s has %s\n", stepText(o.Step), Clean(o.Majority), stepText(o.Their))
	}
	if o.Step != nil && o.Step.Message != "" {
		fmt.Fprintf(w, "  %s: %s\n", Clean(o.Step.Reason), Clean(o.Step.Message))
	}
	for _, c := range o.Calls {
		switch c.Op {
		case "-":
			fmt.Fprintf(w, "  - %s: only %s sends it (%s)\n", c.Method, Clean(o.Node), c.Code)
		case "+":
			fmt.Fprintf(w, "  + %s: only %s sends it (%s)\n", c.Method, Clean(o.Majority), c.Their)
		default:
			fmt.Fprintf(w, "  ~ %s", c.Method)
			if c.Code != c.Their {
				fmt.Fprintf(w, ": code %s, %s has %s", c.Code, Clean(o.Majority), c.Their)
			}
			fmt.Fprintln(w)
			for _, f := range c.Fields {
				fmt.Fprintf(w, "      %s: %s  (%s: %s)\n", f.Path, orDash(f.A), Clean(o.Majority), orDash(f.B))
			}
		}
	}
}

func stepText(s *StepOutcome) string {
	t := Clean(s.Name) + " " + string(s.State)
	if s.Reason != "" {
		t += " (" + Clean(s.Reason) + ")"
	}
	return t
}

func outcomeText(g Group) string {
	if g.Failure != nil {
		return fmt.Sprintf("%s at %s/%s: %s", g.Outcome, g.Failure.Stage, Clean(g.Failure.Step), Clean(g.Failure.Reason))
	}
	return g.Outcome
}

func ranCount(a *Analysis) int {
	n := 0
	for _, g := range a.Groups {
		n += len(g.Nodes)
	}
	return n
}

func cleanAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = Clean(v)
	}
	return out
}

// endpointText is the ENDPOINT column: the endpoint and where it came
// from (annotation, configz, default, flag).
func endpointText(r *Result) string {
	if r.Endpoint == "" {
		return "-"
	}
	if r.Shadow {
		return Clean(r.Endpoint) + " (" + r.EndpointFrom + ", shadow)"
	}
	return Clean(r.Endpoint) + " (" + r.EndpointFrom + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return Clean(s)
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
