package fleet

import (
	"fmt"
	"sort"
	"strings"

	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Analysis is what the fleet found across nodes.
type Analysis struct {
	// Groups are the nodes that ran, grouped by their sequence of step
	// outcomes (name, state, reason), the largest first: Groups[0] is the
	// majority.
	Groups []Group `json:"groups"`
	// Odd are the minority groups compared with the majority.
	Odd []Odd `json:"odd"`
	// NotRun are the nodes whose runner did not run to its end.
	NotRun []string `json:"not_run"`
	// Outliers are stage times far above the other nodes'.
	Outliers []Outlier `json:"outliers"`
	// OutlierRule says how outliers are decided.
	OutlierRule string `json:"outlier_rule"`
	// ExitCode is the fleet's exit code over all nodes (ExitCode).
	ExitCode int `json:"exit_code"`
}

// Group is nodes whose runs took the same steps with the same outcomes.
type Group struct {
	Nodes []string `json:"nodes"`
	// Outcome is the group's run outcome and, when it failed, where.
	Outcome string          `json:"outcome"`
	Failure *report.Failure `json:"failure,omitempty"`
	// Signature is the sequence: one "name state[ reason]" per step.
	Signature []string `json:"signature"`
}

// Odd is a minority group set against the majority.
type Odd struct {
	Nodes []string `json:"nodes"`
	// Majority is the majority's representative node, Node the odd group's.
	Majority string `json:"majority"`
	Node     string `json:"node"`
	// Index is the position (0-based) of the first step that differs; the
	// step as each side ran it (nil: that side has no step there).
	Index int              `json:"index"`
	Step  *StepOutcome     `json:"step"`
	Their *StepOutcome     `json:"majority_step"`
	Calls []CallDifference `json:"calls"`
}

// StepOutcome is one step's name and outcome.
type StepOutcome struct {
	Name    string      `json:"name"`
	Stage   steps.Stage `json:"stage"`
	State   steps.State `json:"state"`
	Reason  string      `json:"reason,omitempty"`
	Message string      `json:"message,omitempty"`
}

// CallDifference is a CRI call of the differing step that differs
// between the odd node and the majority's: fields of its request (after
// podstep diff's normalisations), its gRPC code, or a call one side made
// and the other did not.
type CallDifference struct {
	// Op is diff's: "~" (the call differs), "-" (the odd node's only),
	// "+" (the majority's only).
	Op     diff.Op          `json:"op"`
	Method string           `json:"method"`
	Code   string           `json:"code,omitempty"`
	Their  string           `json:"majority_code,omitempty"`
	Fields []diff.FieldDiff `json:"fields,omitempty"`
}

// Outlier is one node's stage time far above the others'.
type Outlier struct {
	Node     string      `json:"node"`
	Stage    steps.Stage `json:"stage"`
	Ms       float64     `json:"ms"`
	MedianMs float64     `json:"median_ms"`
	MADMs    float64     `json:"mad_ms"`
}

// Outlier thresholds: a stage time is an outlier when it is above
// median + OutlierMADs×MAD, above OutlierRatio×median, and at least
// OutlierMinMs above the median, among at least OutlierMinNodes nodes that
// ran the stage. MAD is the median absolute deviation from the median
// (unscaled). The ratio and the floor keep sub-millisecond noise and the
// zero MAD of identical times from flagging anything.
const (
	OutlierMADs     = 3
	OutlierRatio    = 2
	OutlierMinMs    = 100
	OutlierMinNodes = 3
)

// Exit codes, as podstep run's.
const (
	exitOK          = 0
	exitPodFailed   = 1
	exitRuntime     = 3
	exitLeftBehind  = 4
	exitInterrupted = 130
)

// signature is a run's sequence of step outcomes.
func signature(r *Result) []string {
	out := make([]string, 0, len(r.Steps))
	for _, s := range r.Steps {
		out = append(out, outcomeKey(s))
	}
	return out
}

func outcomeKey(s report.StepJSON) string {
	k := s.Name + " " + string(s.State)
	if s.Reason != "" {
		k += " " + s.Reason
	}
	return k
}

// Analyze compares the nodes' results. results are in the fleet's node
// order; the analysis does not change them.
func Analyze(results []*Result) *Analysis {
	a := &Analysis{Groups: []Group{}, Odd: []Odd{}, NotRun: []string{}, Outliers: []Outlier{},
		OutlierRule: fmt.Sprintf("a stage time > median + %d×MAD, > %d× the median and ≥ %d ms above it, among ≥ %d nodes that ran the stage",
			OutlierMADs, OutlierRatio, OutlierMinMs, OutlierMinNodes)}
	byKey := map[string]int{}
	rep := map[int]*Result{} // a group's representative: its first node
	for _, r := range results {
		if r.Status != Ran {
			a.NotRun = append(a.NotRun, r.Node)
			continue
		}
		sig := signature(r)
		k := strings.Join(sig, "\n")
		i, ok := byKey[k]
		if !ok {
			i = len(a.Groups)
			byKey[k] = i
			a.Groups = append(a.Groups, Group{Outcome: r.Outcome(), Failure: r.Failure(), Signature: sig})
			rep[i] = r
		}
		a.Groups[i].Nodes = append(a.Groups[i].Nodes, r.Node)
	}
	// The majority is the largest group; on a tie, the one whose pod did
	// not fail, then the first seen.
	order := make([]int, len(a.Groups))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		gx, gy := a.Groups[order[x]], a.Groups[order[y]]
		if len(gx.Nodes) != len(gy.Nodes) {
			return len(gx.Nodes) > len(gy.Nodes)
		}
		return gx.Failure == nil && gy.Failure != nil
	})
	groups := make([]Group, len(order))
	reps := make([]*Result, len(order))
	for i, j := range order {
		groups[i], reps[i] = a.Groups[j], rep[j]
	}
	a.Groups = groups
	for i := 1; i < len(groups); i++ {
		a.Odd = append(a.Odd, compare(groups[i], reps[i], reps[0]))
	}
	a.Outliers = outliers(results)
	a.ExitCode = ExitCode(results)
	return a
}

// compare finds the first step where r (an odd group's) differs from the
// majority's m, and what differs in that step's calls.
func compare(g Group, r, m *Result) Odd {
	o := Odd{Nodes: g.Nodes, Majority: m.Node, Node: r.Node, Calls: []CallDifference{}}
	n := max(len(r.Steps), len(m.Steps))
	for i := 0; i < n; i++ {
		var rs, ms *report.StepJSON
		if i < len(r.Steps) {
			rs = &r.Steps[i]
		}
		if i < len(m.Steps) {
			ms = &m.Steps[i]
		}
		if rs != nil && ms != nil && outcomeKey(*rs) == outcomeKey(*ms) {
			continue
		}
		o.Index, o.Step, o.Their = i, stepOutcome(rs), stepOutcome(ms)
		o.Calls = callDifferences(r, rs, m, ms)
		return o
	}
	return o
}

func stepOutcome(s *report.StepJSON) *StepOutcome {
	if s == nil {
		return nil
	}
	return &StepOutcome{Name: s.Name, Stage: s.Stage, State: s.State, Reason: s.Reason, Message: s.Message}
}

// callDifferences compares the two steps' calls as `podstep diff` does
// (aligned, requests normalised field by field). Pod UIDs and names differ
// between nodes by design; the normalisations take them out.
func callDifferences(r *Result, rs *report.StepJSON, m *Result, ms *report.StepJSON) []CallDifference {
	out := []CallDifference{}
	if rs == nil && ms == nil {
		return out
	}
	// The whole runs are compared, so that the IDs the calls carry are
	// normalised as in podstep diff; then the entries of the step kept.
	res := diff.Compare(recordingOf(r), recordingOf(m))
	var rName, mName string
	if rs != nil {
		rName = rs.Name
	}
	if ms != nil {
		mName = ms.Name
	}
	for _, e := range res.Calls {
		if e.Op == diff.Same {
			continue
		}
		if (e.StepA == "" || e.StepA != rName) && (e.StepB == "" || e.StepB != mName) {
			continue
		}
		out = append(out, CallDifference{Op: e.Op, Method: e.Method, Code: e.CodeA, Their: e.CodeB, Fields: cleanFields(e.Fields)})
	}
	return out
}

func cleanFields(fs []diff.FieldDiff) []diff.FieldDiff {
	for i := range fs {
		fs[i].Path, fs[i].A, fs[i].B = Clean(fs[i].Path), Clean(fs[i].A), Clean(fs[i].B)
	}
	return fs
}

// recordingOf turns a node's steps into what internal/diff compares.
func recordingOf(r *Result) *diff.Recording {
	rec := &diff.Recording{Name: r.Node}
	stageMs := map[steps.Stage]*diff.StageTime{}
	for _, s := range r.Steps {
		st, ok := stageMs[s.Stage]
		if !ok {
			rec.Stages = append(rec.Stages, diff.StageTime{Stage: s.Stage})
			st = &rec.Stages[len(rec.Stages)-1]
			stageMs[s.Stage] = st
		}
		st.Ms += s.DurationMs
		for _, c := range s.Calls {
			st.CRIMs += c.DurationMs
			st.Calls++
			rec.Calls = append(rec.Calls, &diff.Call{Step: s.ID, StepName: s.Name, Stage: s.Stage, Container: s.Container,
				Method: c.Method, Code: c.Code, Request: c.Request, Response: c.Response, Started: c.Started,
				DurationMs: c.DurationMs, Count: 1})
		}
	}
	// rec.Stages grew while pointers into it were kept: rebuild them.
	for i := range rec.Stages {
		rec.Stages[i] = *stageMs[rec.Stages[i].Stage]
	}
	return rec
}

// outliers applies the outlier rule to each stage's times.
func outliers(results []*Result) []Outlier {
	out := []Outlier{}
	per := map[steps.Stage][]float64{}
	var stages []steps.Stage
	ms := make([]map[steps.Stage]float64, len(results))
	for i, r := range results {
		if r.Status != Ran {
			continue
		}
		ms[i] = r.StageMs()
		for _, s := range r.Steps {
			if _, ok := per[s.Stage]; !ok {
				per[s.Stage] = nil
				stages = append(stages, s.Stage)
			}
		}
		for st, v := range ms[i] {
			per[st] = append(per[st], v)
		}
	}
	for _, st := range stages {
		vals := per[st]
		if len(vals) < OutlierMinNodes {
			continue
		}
		med := median(vals)
		dev := make([]float64, len(vals))
		for i, v := range vals {
			dev[i] = abs(v - med)
		}
		mad := median(dev)
		for i, r := range results {
			v, ok := ms[i][st]
			if !ok {
				continue
			}
			if v > med+OutlierMADs*mad && v > OutlierRatio*med && v-med >= OutlierMinMs {
				out = append(out, Outlier{Node: r.Node, Stage: st, Ms: v, MedianMs: med, MADMs: mad})
			}
		}
	}
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// ExitCode is the fleet's exit code, as run's over all nodes: 130 when
// any node was interrupted, else the most serious of the nodes': 4 (a
// teardown left something), 3 (a runtime, or a runner, that could not be
// used: not ready, not started, crashed), 1 (the pod failed), 0.
func ExitCode(results []*Result) int {
	rank := map[int]int{exitOK: 0, exitPodFailed: 1, exitRuntime: 2, exitLeftBehind: 3, exitInterrupted: 4}
	code := exitOK
	for _, r := range results {
		c := r.ExitCode
		switch r.Status {
		case Ran:
		case Interrupted:
			c = exitInterrupted
		default:
			c = exitRuntime
		}
		if _, ok := rank[c]; !ok {
			c = exitRuntime // a code run does not give: the runner's own failure
		}
		if rank[c] > rank[code] {
			code = c
		}
	}
	return code
}
