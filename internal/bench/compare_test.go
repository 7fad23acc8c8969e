package bench

import "testing"

func level(k int, phase []float64) Level {
	return Level{Concurrency: k, Phases: []Series{Summarize("sandbox", phase)}}
}

func scaled(v []float64, f, plus float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x*f + plus
	}
	return out
}

func TestCompare(t *testing.T) {
	base := []float64{100, 102, 98, 101, 99, 103, 97, 100, 104, 96}
	tests := []struct {
		name        string
		cur         []float64
		threshold   float64
		minChange   float64
		significant bool
		regression  bool
	}{
		{"same figures", base, 10, 1, false, false},
		{"50% slower", scaled(base, 1.5, 0), 10, 1, true, true},
		{"5% slower, threshold 10%", scaled(base, 1, 5.5), 10, 1, true, false},
		{"50% slower, but under the minimum change", scaled(base, 1.5, 0), 10, 100, true, false},
		{"twice as fast", scaled(base, 0.5, 0), 10, 1, true, false},
		{"slower but one sample", []float64{150}, 10, 1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Result{Levels: []Level{level(1, base)}}
			n := &Result{Levels: []Level{level(1, tt.cur)}}
			c := Compare(b, n, tt.threshold, tt.minChange)
			if len(c.Rows) != 1 {
				t.Fatalf("rows: %+v", c.Rows)
			}
			r := c.Rows[0]
			if r.Significant != tt.significant || r.Regression != tt.regression {
				t.Errorf("significant %v regression %v (p=%.4f, change %.1f%%), want %v %v", r.Significant, r.Regression, r.P, r.DeltaPct, tt.significant, tt.regression)
			}
			if want := 0; tt.regression {
				if c.Regressions() != 1 {
					t.Errorf("Regressions() = %d, want 1", c.Regressions())
				}
			} else if c.Regressions() != want {
				t.Errorf("Regressions() = %d, want 0", c.Regressions())
			}
		})
	}
}

func TestCompareLevels(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5}
	b := &Result{Levels: []Level{level(1, v), level(2, v)}}
	n := &Result{Levels: []Level{level(2, v), level(4, v)}}
	c := Compare(b, n, 10, 1)
	if len(c.Rows) != 1 || c.Rows[0].Concurrency != 2 {
		t.Errorf("rows %+v: want only concurrency 2", c.Rows)
	}
	if len(c.Unmatched) != 2 {
		t.Errorf("unmatched %v: want concurrency 4 (new) and 1 (baseline)", c.Unmatched)
	}
}
