package bench

import (
	"fmt"
	"io"
	"strings"
)

// SimulatedNote is what a result of the simulated runtime says first.
const SimulatedNote = "SIMULATED runtime (built-in, no containers really run): these figures measure podstep, not a node"

// WriteText writes the result as the text report: per level the phases,
// the CRI methods, the startup SLIs, the CRI floor against podstep's own
// time and a histogram of the pod startup; then, over several levels,
// the scale curve.
func WriteText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "podstep bench: pod %s (%s), %d pods per level after %d warm-up, on %s\n", r.Pod, r.File, r.N, r.Warmup, runtimeLine(r.Runtime))
	if r.Simulated {
		fmt.Fprintln(w, SimulatedNote)
	}
	if len(r.RestsOn) > 0 {
		fmt.Fprintln(w, "on the simulated runtime the verdicts rest on:")
		for _, l := range r.RestsOn {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	for i := range r.Levels {
		writeLevel(w, &r.Levels[i])
	}
	if len(r.Levels) > 1 {
		writeScale(w, r.Levels)
	}
}

func runtimeLine(rt Runtime) string {
	var s string
	switch {
	case rt.Simulated:
		s = "the SIMULATED runtime"
	case rt.Name != "":
		s = rt.Name + " " + rt.Version
	default:
		s = "the runtime"
	}
	return s + " at " + rt.Endpoint
}

const tableHead = "%-34s %5s %9s %9s %9s %9s %9s\n"

func writeSeries(w io.Writer, name string, count string, s Series) {
	fmt.Fprintf(w, tableHead, name, count, fmtMs(s.Min), fmtMs(s.P50), fmtMs(s.P90), fmtMs(s.P99), fmtMs(s.Max))
}

func writeLevel(w io.Writer, l *Level) {
	fmt.Fprintf(w, "\nconcurrency %d: %d pods in %s (%.1f pods/s), %d failed; process CPU %s per pod\n",
		l.Concurrency, l.Pods, fmtMs(l.WallMs), l.PodsPerSec, l.Failed, fmtMs(l.CPUPerPodMs))
	for _, e := range l.Errors {
		fmt.Fprintf(w, "  failed: %s\n", e)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, tableHead, "phase", "n", "min", "p50", "p90", "p99", "max")
	for _, s := range l.Phases {
		writeSeries(w, s.Name, fmt.Sprint(s.N), s)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, tableHead, "CRI method", "/pod", "min", "p50", "p90", "p99", "max")
	for _, s := range l.Methods {
		writeSeries(w, s.Name, trimFloat(s.PerPod), s)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, tableHead, "pod startup (the kubelet's SLIs)", "n", "min", "p50", "p90", "p99", "max")
	writeSeries(w, "pod_start_sli_duration_seconds", fmt.Sprint(l.SLI.N), l.SLI)
	writeSeries(w, "pod_start_total_duration_seconds", fmt.Sprint(l.Total.N), l.Total)
	fmt.Fprintln(w)
	fmt.Fprintf(w, tableHead, "per pod (creation + teardown)", "n", "min", "p50", "p90", "p99", "max")
	writeSeries(w, "CRI floor (time in CRI calls)", fmt.Sprint(l.Floor.N), l.Floor)
	writeSeries(w, "podstep's own time", fmt.Sprint(l.Own.N), l.Own)
	writeSeries(w, "waiting on purpose", fmt.Sprint(l.Wait.N), l.Wait)
	writeSeries(w, "wall", fmt.Sprint(l.Wall.N), l.Wall)
	fmt.Fprintf(w, "podstep's own time is %.1f%% of the CRI floor (medians)\n", l.OwnPct)
	if l.Total.N > 0 {
		fmt.Fprintf(w, "\npod_start_total_duration_seconds, %d pods:\n", l.Total.N)
		Histogram(w, l.Total.Samples, 8, 40)
	}
}

func writeScale(w io.Writer, levels []Level) {
	fmt.Fprintf(w, "\nscale curve (K pods at once)\n")
	fmt.Fprintf(w, "%4s %8s %10s %10s %10s %10s %10s %9s %9s\n", "K", "pods/s", "SLI p50", "SLI p99", "total p99", "floor p50", "own p50", "own ×K=1", "CPU/pod")
	base := levels[0].Own.P50
	for _, l := range levels {
		growth := "-"
		if base > 0 {
			growth = fmt.Sprintf("%.2f×", l.Own.P50/base)
		}
		fmt.Fprintf(w, "%4d %8.1f %10s %10s %10s %10s %10s %9s %9s\n", l.Concurrency, l.PodsPerSec, fmtMs(l.SLI.P50), fmtMs(l.SLI.P99),
			fmtMs(l.Total.P99), fmtMs(l.Floor.P50), fmtMs(l.Own.P50), growth, fmtMs(l.CPUPerPodMs))
	}
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// WriteComparison writes the comparison: a line per figure, its medians,
// the change, the U test's p-value and the verdict.
func WriteComparison(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "\ncompare: base %s (%s) → new %s\n", runtimeLine(c.Base.Runtime), c.Base.Started.Format("2006-01-02 15:04Z07:00"), runtimeLine(c.New.Runtime))
	if c.Base.Simulated != c.New.Simulated {
		fmt.Fprintln(w, "warning: one side ran on the SIMULATED runtime")
	}
	fmt.Fprintf(w, "regression: p < %.2f (Mann-Whitney U), median slower by more than %s%% and by at least %s\n", Alpha, trimFloat(c.ThresholdPct), fmtMs(c.MinChangeMs))
	for _, u := range c.Unmatched {
		fmt.Fprintf(w, "  %s\n", u)
	}
	k := -1
	for _, r := range c.Rows {
		if r.Concurrency != k {
			k = r.Concurrency
			fmt.Fprintf(w, "\nconcurrency %d\n%-34s %10s %10s %9s %14s\n", k, "figure", "base p50", "new p50", "change", "p (n)")
		}
		verdict := "~"
		switch {
		case r.Regression:
			verdict = "REGRESSION"
		case r.Significant && r.DeltaPct < 0:
			verdict = "faster"
		case r.Significant:
			verdict = "slower (within threshold)"
		}
		if r.Warning != "" {
			verdict += " (" + r.Warning + ")"
		}
		fmt.Fprintf(w, "%-34s %10s %10s %+8.1f%% %14s  %s\n", r.Name, fmtMs(r.BaseP50), fmtMs(r.NewP50), r.DeltaPct,
			fmt.Sprintf("p=%.3f n=%d+%d", r.P, r.N1, r.N2), verdict)
	}
	fmt.Fprintf(w, "\n%d regression(s)\n", c.Regressions())
}
