package record

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// capture runs the init pod on the simulated runtime and returns its
// events (steps with their calls and pod snapshots) and the engine.
func capture(b *testing.B) ([]steps.Event, *steps.Engine) {
	// The engine's defaults but for the shared test dirs, grace and polls:
	// no init timeout, restarts or settle time.
	eng := stepstest.New(b, repoFile("testdata/pods/init.yaml"), func(o *steps.Options) {
		o.InitTimeout, o.MaxRestarts, o.BackoffScale, o.Settle = 0, 0, 0, 0
	}).Engine
	var evs []steps.Event
	eng.Subscribe(func(ev steps.Event) { evs = append(evs, ev) })
	stepstest.Through(b, eng)
	return evs, eng
}

// BenchmarkRecorder1000Steps writes a stream of 1,000 steps (the events of
// a real run on the simulated runtime, over and over: each step with its
// step-started, call-sent, call and step lines, its pod snapshot, and a
// look at the plan and the container logs), to a file. One op is one stream;
// ns/step and bytes/step are reported.
func BenchmarkRecorder1000Steps(b *testing.B) {
	evs, eng := capture(b)
	for _, compress := range []bool{false, true} {
		name := "plain"
		if compress {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			var written int64
			for i := 0; i < b.N; i++ {
				f, err := os.Create(filepath.Join(b.TempDir(), "bench.rec"))
				if err != nil {
					b.Fatal(err)
				}
				cw := &countWriter{w: f}
				r := New(cw, compress)
				if err := r.Start(Header{Podstep: "bench"}, eng, render.Runtime{Endpoint: "unix:///bench"}, "default/bench"); err != nil {
					b.Fatal(err)
				}
				for done := 0; done < 1000; {
					for _, ev := range evs {
						r.Observe(ev)
						if ev.Kind == steps.StepDone {
							if done++; done == 1000 {
								break
							}
						}
					}
				}
				if err := r.Finish(report.Summary{Pod: "default/bench"}); err != nil {
					b.Fatal(err)
				}
				written += cw.n
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/step")
			b.ReportMetric(float64(written)/float64(b.N)/1000, "bytes/step")
		})
	}
}

// countWriter counts what goes to the file.
type countWriter struct {
	w io.Writer
	n int64
}

func (w *countWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

var _ io.Writer = (*countWriter)(nil)
