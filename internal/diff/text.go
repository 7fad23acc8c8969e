package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/render"
)

// WriteJSON writes the result as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write the comparison: %w", err)
	}
	return nil
}

// WriteText writes the result for people: the two recordings, the
// normalisations with the values they replaced, the aligned calls like a
// unified diff (with the differing fields under each changed call), the
// time per stage side by side, and a last line with the counts.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, s := range []struct {
		tag string
		s   Side
	}{{"A", r.A}, {"B", r.B}} {
		fmt.Fprintf(&b, "%s: %s (%s, podstep %s, recorded %s, %d calls)\n", s.tag, s.s.Name, s.s.Runtime,
			s.s.Podstep, s.s.Recorded.UTC().Format("2006-01-02 15:04:05 MST"), s.s.Calls)
	}
	if r.Manifest.Same {
		b.WriteString("manifest: the same pod spec\n")
	} else {
		fmt.Fprintf(&b, "manifest: WARNING: %s\n", r.Manifest.Why)
	}

	b.WriteString("\nnormalised before comparing (what differs between any two runs):\n")
	for _, n := range r.Normalisations {
		fmt.Fprintf(&b, "  %-26s %s\n", n.Placeholder, n.What)
		for _, s := range []struct {
			tag string
			s   Side
		}{{"A", r.A}, {"B", r.B}} {
			for _, sub := range s.s.Substs {
				if matches(n.Placeholder, sub.Placeholder) {
					fmt.Fprintf(&b, "  %-26s   %s: %s = %s\n", "", s.tag, sub.Placeholder, short(sub.Value))
				}
			}
		}
	}

	b.WriteString("\ncalls, aligned on method and container (-: only in A, +: only in B, ~: requests differ):\n")
	for _, e := range r.Calls {
		b.WriteString(e.line())
		for _, f := range e.Fields {
			fmt.Fprintf(&b, "      %s\n", f.Path)
			fmt.Fprintf(&b, "        - %s\n", orAbsent(f.A))
			fmt.Fprintf(&b, "        + %s\n", orAbsent(f.B))
		}
	}

	b.WriteString("\ntime per stage (the stage's steps; CRI: its calls):\n")
	row := func(cols ...string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-14s %9s %9s %9s %9s %9s %8s %8s", cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]), " ") + "\n")
	}
	row("stage", "A", "B", "delta", "A CRI", "B CRI", "A calls", "B calls")
	var ta, tb float64
	for _, s := range r.Stages {
		ta += s.AMs
		tb += s.BMs
		row(string(s.Stage), ran(s.InA, s.AMs), ran(s.InB, s.BMs), delta(s.DeltaMs), ran(s.InA, s.ACRIMs),
			ran(s.InB, s.BCRIMs), fmt.Sprint(s.ACalls), fmt.Sprint(s.BCalls))
	}
	row("total", render.Ms(ta), render.Ms(tb), delta(round3(tb-ta)), "", "", "", "")

	c := r.Counts
	verdict := "the same after normalisation"
	if r.Differs() {
		verdict = "they differ"
	}
	fmt.Fprintf(&b, "\n%d calls the same, %d differ, %d only in A, %d only in B: %s\n", c.Same, c.Differ, c.OnlyA, c.OnlyB, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// line is an entry's line in the aligned calls.
func (e Entry) line() string {
	op := " "
	if e.Op != Same {
		op = string(e.Op)
	}
	what := e.Method
	if e.Container != "" {
		what += " (" + e.Container + ")"
	}
	var count string
	switch {
	case e.Op == OnlyA && e.CountA > 1:
		count = fmt.Sprintf("×%d", e.CountA)
	case e.Op == OnlyB && e.CountB > 1:
		count = fmt.Sprintf("×%d", e.CountB)
	case (e.Op == Same || e.Op == Differ) && (e.CountA > 1 || e.CountB > 1):
		count = fmt.Sprintf("×%d / ×%d", e.CountA, e.CountB)
	}
	step := e.StepA
	if e.StepB != "" && e.StepB != e.StepA {
		if step != "" {
			step += " / "
		}
		step += e.StepB
	}
	code := ""
	switch {
	case e.CodeA != e.CodeB && e.Op == Differ:
		code = "  code " + e.CodeA + " / " + e.CodeB
	case e.Op != OnlyB && e.CodeA != "OK":
		code = "  code " + e.CodeA
	case e.Op == OnlyB && e.CodeB != "OK":
		code = "  code " + e.CodeB
	}
	return fmt.Sprintf("  %s %-40s %-10s %s%s\n", op, what, count, step, code)
}

// matches says whether a placeholder (<container:app/0>) is of a rule
// (<container:NAME/ATTEMPT>, <sandbox> for <sandbox#2>).
func matches(rule, ph string) bool {
	if rule == ph {
		return true
	}
	base, _, ok := strings.Cut(rule, ":")
	if ok && strings.HasPrefix(ph, base+":") {
		return true
	}
	return strings.HasPrefix(ph, strings.TrimSuffix(rule, ">")+"#")
}

// short shortens a 64-hex ID for display.
func short(v string) string {
	if reHexID().MatchString(v) && len(v) == 64 {
		return v[:12] + "…"
	}
	return v
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}

func ran(in bool, ms float64) string {
	if !in {
		return "-"
	}
	return render.Ms(ms)
}

func delta(ms float64) string {
	switch {
	case ms > -0.05 && ms < 0.05:
		return "0"
	case ms > 0:
		return "+" + render.Ms(ms)
	}
	return "-" + render.Ms(-ms)
}
