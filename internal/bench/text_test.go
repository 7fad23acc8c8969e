package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/golden"
)

// fixedLevel is a level with fixed figures: sample i of a series is
// base·(1 + i/10).
func fixedLevel(k int, base float64) Level {
	v := func(b float64) []float64 {
		out := make([]float64, 10)
		for i := range out {
			out[i] = b * (1 + float64(i)/10)
		}
		return out
	}
	l := Level{Concurrency: k, Pods: 10, WallMs: 10 * base * 300, PodsPerSec: round(1000 / (base * 300) * float64(k)), CPUPerPodMs: base * 2}
	for _, ph := range []struct {
		name string
		b    float64
	}{{"admit", 0.1}, {"dirs", 0.3}, {"sandbox", 120}, {"create", 30}, {"start", 90}, {"teardown", 60}} {
		l.Phases = append(l.Phases, Summarize(ph.name, v(ph.b*base)))
	}
	for _, m := range []string{"RunPodSandbox", "StopPodSandbox"} {
		s := Summarize(m, v(100*base))
		s.PerPod = 1
		l.Methods = append(l.Methods, s)
	}
	l.SLI, l.Total = Summarize("pod_start_sli_duration", v(240*base)), Summarize("pod_start_total_duration", v(241*base))
	l.Floor, l.Own = Summarize("cri_floor", v(290*base)), Summarize("own", v(4*base))
	l.Wait, l.Wall = Summarize("wait", make([]float64, 10)), Summarize("wall", v(300*base))
	l.OwnPct = round(100 * l.Own.P50 / l.Floor.P50)
	return l
}

func fixedResult(sim bool, base float64) *Result {
	return &Result{Schema: Schema, File: "testdata/pods/hello.yaml", Pod: "default/hello",
		Runtime:   Runtime{Endpoint: "unix:///run/containerd/containerd.sock", Simulated: sim, Name: "containerd", Version: "v2.4.2"},
		Simulated: sim, N: 10, Warmup: 2, Started: time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC),
		Levels: []Level{fixedLevel(1, base), fixedLevel(4, base*1.5)}}
}

func TestWriteText(t *testing.T) {
	tests := []struct {
		name string
		res  *Result
	}{
		{"report", fixedResult(false, 1)},
		{"report-simulated", fixedResult(true, 0.01)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteText(&b, tt.res)
			golden.Check(t, "testdata/"+tt.name+".golden", b.String())
		})
	}
}

func TestWriteComparison(t *testing.T) {
	base := fixedResult(false, 1)
	base.Runtime.Version = "1.6.20~ds1"
	cur := fixedResult(false, 1.3)
	var b bytes.Buffer
	c := Compare(base, cur, 10, 1)
	WriteComparison(&b, c)
	golden.Check(t, "testdata/compare.golden", b.String())
	if c.Regressions() == 0 {
		t.Errorf("30%% slower everywhere: no regression found")
	}
}

func TestHistogram(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want string
	}{
		{"one value", []float64{5, 5}, "    5.000ms – 5.000ms      2 ████\n"},
		{"two bins", []float64{1, 1, 1, 3}, "    1.000ms – 2.000ms      3 ████\n    2.000ms – 3.000ms      1 █▍\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			Histogram(&b, tt.in, 2, 4)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}
