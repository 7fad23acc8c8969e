package bench

import (
	"math"
	"sort"

	"github.com/aclements/go-moremath/stats"
)

// Series is one measured quantity over a level's pods (or CRI calls), in
// milliseconds: its order statistics and the samples themselves, which
// Compare needs from a baseline.
type Series struct {
	// Name is the phase, CRI method or figure measured.
	Name string `json:"name"`
	// N is the number of samples.
	N int `json:"n"`
	// Min, P50, P90, P99 and Max are order statistics, in ms.
	Min float64 `json:"min_ms"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// PerPod is the mean number of samples per pod (CRI methods: calls per pod).
	PerPod float64 `json:"per_pod,omitempty"`
	// Samples are the values, in the order measured.
	Samples []float64 `json:"samples_ms"`
}

// Summarize makes the Series of values (ms). Percentiles are the
// Hyndman-Fan type 8 estimate of github.com/aclements/go-moremath/stats
// (Sample.Quantile), the one benchstat's medians use; with fewer samples
// than a percentile can tell apart, the high ones fall to the maximum.
func Summarize(name string, values []float64) Series {
	s := Series{Name: name, N: len(values), Samples: append([]float64{}, values...)}
	if len(values) == 0 {
		return s
	}
	sorted := append([]float64{}, values...)
	sort.Float64s(sorted)
	smp := stats.Sample{Xs: sorted, Sorted: true}
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.P50, s.P90, s.P99 = round(smp.Quantile(0.5)), round(smp.Quantile(0.9)), round(smp.Quantile(0.99))
	s.Min, s.Max = round(s.Min), round(s.Max)
	return s
}

// round keeps microseconds: what the clock of a CRI call resolves.
func round(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// ms is d in milliseconds, to the microsecond.
func ms(ns int64) float64 { return round(float64(ns) / 1e6) }
