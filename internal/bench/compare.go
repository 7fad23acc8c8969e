package bench

import (
	"fmt"

	"golang.org/x/perf/benchmath"
)

// Alpha is the significance level of Compare's tests.
const Alpha = 0.05

// Comparison is a Result set against a baseline.
type Comparison struct {
	Base, New *Result
	// ThresholdPct and MinChangeMs are the regression thresholds.
	ThresholdPct float64
	MinChangeMs  float64
	Rows         []Row
	// Unmatched names the levels only one side has.
	Unmatched []string
}

// Row compares one figure at one concurrency.
type Row struct {
	Concurrency int    `json:"concurrency"`
	Name        string `json:"name"`
	// BaseP50 and NewP50 are the medians, in ms; DeltaPct the change.
	BaseP50  float64 `json:"base_p50_ms"`
	NewP50   float64 `json:"new_p50_ms"`
	DeltaPct float64 `json:"delta_pct"`
	// P is the Mann-Whitney U test's p-value of the two samples
	// (golang.org/x/perf/benchmath.AssumeNothing), N1 and N2 their sizes.
	P  float64 `json:"p"`
	N1 int     `json:"n1"`
	N2 int     `json:"n2"`
	// Significant is P < Alpha; Regression is significant, slower by more
	// than the threshold and by at least the minimum change.
	Significant bool   `json:"significant"`
	Regression  bool   `json:"regression"`
	Warning     string `json:"warning,omitempty"`
}

// Regressions counts the rows that regressed.
func (c *Comparison) Regressions() int {
	n := 0
	for _, r := range c.Rows {
		if r.Regression {
			n++
		}
	}
	return n
}

// Compare sets cur against base, level by level (matched by
// concurrency): each phase, then the two startup SLIs, the CRI floor and
// podstep's own time. A figure regressed when the U test finds the
// samples differ (p < Alpha), its median grew by more than thresholdPct
// percent, and by at least minChangeMs.
func Compare(base, cur *Result, thresholdPct, minChangeMs float64) *Comparison {
	c := &Comparison{Base: base, New: cur, ThresholdPct: thresholdPct, MinChangeMs: minChangeMs}
	baseLevels := map[int]*Level{}
	for i := range base.Levels {
		baseLevels[base.Levels[i].Concurrency] = &base.Levels[i]
	}
	seen := map[int]bool{}
	for i := range cur.Levels {
		nl := &cur.Levels[i]
		bl, ok := baseLevels[nl.Concurrency]
		if !ok {
			c.Unmatched = append(c.Unmatched, fmt.Sprintf("concurrency %d: not in the baseline", nl.Concurrency))
			continue
		}
		seen[nl.Concurrency] = true
		for _, pair := range pairs(bl, nl) {
			c.Rows = append(c.Rows, c.row(nl.Concurrency, pair[0], pair[1]))
		}
	}
	for _, bl := range base.Levels {
		if !seen[bl.Concurrency] {
			c.Unmatched = append(c.Unmatched, fmt.Sprintf("concurrency %d: only in the baseline", bl.Concurrency))
		}
	}
	return c
}

// pairs lists the series both levels have, phases first.
func pairs(b, n *Level) [][2]Series {
	var out [][2]Series
	bp := map[string]Series{}
	for _, s := range b.Phases {
		bp[s.Name] = s
	}
	for _, s := range n.Phases {
		if o, ok := bp[s.Name]; ok {
			out = append(out, [2]Series{o, s})
		}
	}
	for _, p := range [][2]Series{{b.SLI, n.SLI}, {b.Total, n.Total}, {b.Floor, n.Floor}, {b.Own, n.Own}} {
		if p[0].N > 0 && p[1].N > 0 {
			out = append(out, p)
		}
	}
	return out
}

func (c *Comparison) row(k int, b, n Series) Row {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = Alpha
	bs, ns := benchmath.NewSample(b.Samples, &th), benchmath.NewSample(n.Samples, &th)
	bm, nm := benchmath.AssumeNothing.Summary(bs, 0.95).Center, benchmath.AssumeNothing.Summary(ns, 0.95).Center
	cmp := benchmath.AssumeNothing.Compare(bs, ns)
	r := Row{Concurrency: k, Name: n.Name, BaseP50: round(bm), NewP50: round(nm), P: cmp.P, N1: cmp.N1, N2: cmp.N2}
	switch {
	case bm > 0:
		r.DeltaPct = round(100 * (nm - bm) / bm)
	case nm > 0:
		r.Warning = "the baseline's median is 0"
	}
	r.Significant = cmp.P < cmp.Alpha
	r.Regression = r.Significant && r.DeltaPct > c.ThresholdPct && nm-bm >= c.MinChangeMs
	if len(cmp.Warnings) > 0 && r.Warning == "" {
		r.Warning = cmp.Warnings[0].Error()
	}
	return r
}
