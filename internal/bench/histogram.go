package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Histogram writes values (ms) as a terminal histogram: bins equal in
// width from the minimum to the maximum, one line each with its range,
// its count and a bar of at most width cells (eighths of a cell with
// the Unicode block elements).
func Histogram(w io.Writer, values []float64, bins, width int) {
	if len(values) == 0 || bins < 1 || width < 1 {
		return
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if hi == lo {
		bins = 1
	}
	step := (hi - lo) / float64(bins)
	counts := make([]int, bins)
	for _, v := range values {
		i := bins - 1
		if step > 0 {
			i = min(int((v-lo)/step), bins-1)
		}
		counts[i]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	for i, c := range counts {
		from, to := lo+float64(i)*step, lo+float64(i+1)*step
		if bins == 1 {
			to = hi
		}
		line := fmt.Sprintf("  %9s – %-9s %4d %s", fmtMs(from), fmtMs(to), c, bar(float64(c)/float64(most)*float64(width)))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// bar draws cells cells wide, to an eighth.
func bar(cells float64) string {
	eighths := int(math.Round(cells * 8))
	parts := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + parts[eighths%8]
}

// fmtMs shows a duration given in ms: "0.412ms", "12.3ms", "1.52s".
func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.3fms", v)
	}
}
