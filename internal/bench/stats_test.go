package bench

import (
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name                    string
		in                      []float64
		min, p50, p90, p99, max float64
	}{
		{"one", []float64{4}, 4, 4, 4, 4, 4},
		// R8 on 1..10: p50 = 5.5, p90 = 1/3+0.9*(10+1/3) = 9.633 → 9.633,
		// p99 = 1/3+0.99*10.333 = 10.563 ≥ 10 → the maximum.
		{"one to ten, unordered", []float64{7, 1, 10, 3, 5, 2, 9, 4, 8, 6}, 1, 5.5, 9.633, 10, 10},
		{"two", []float64{1, 3}, 1, 2, 3, 3, 3},
		{"ties", []float64{2, 2, 2, 2}, 2, 2, 2, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize("x", tt.in)
			got := [5]float64{s.Min, s.P50, s.P90, s.P99, s.Max}
			want := [5]float64{tt.min, tt.p50, tt.p90, tt.p99, tt.max}
			if got != want {
				t.Errorf("min/p50/p90/p99/max = %v, want %v", got, want)
			}
			if s.N != len(tt.in) || len(s.Samples) != len(tt.in) || s.Samples[0] != tt.in[0] {
				t.Errorf("N %d, samples %v: want the %d samples in order", s.N, s.Samples, len(tt.in))
			}
		})
	}
	if s := Summarize("empty", nil); s.N != 0 || s.P50 != 0 {
		t.Errorf("empty: %+v", s)
	}
}

// TestPercentilesOrdered checks min ≤ p50 ≤ p90 ≤ p99 ≤ max on skewed data.
func TestPercentilesOrdered(t *testing.T) {
	var v []float64
	for i := range 200 {
		v = append(v, float64(i*i%97)+float64(i)/10)
	}
	s := Summarize("x", v)
	if !(s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
		t.Errorf("not ordered: %+v", s)
	}
}
