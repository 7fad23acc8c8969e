package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/bench"
)

// BenchmarkBenchSimulated runs `podstep bench --sim -n 32` at K=1 and
// K=16 pods at once and reports podstep's own time per pod (the median
// over the pods) and podstep's CPU per pod (the simulated runtime runs in
// a process of its own): the bar is own time at K=16 ≤ 2× K=1. The pods'
// dirs go on the disk (the test's temp dir), then, where there is one, on
// tmpfs (/dev/shm): on disk, making and removing them is most of podstep's
// own time, and the filesystem serialises it. files-ms/pod is the own time
// in the steps that make, write or remove the pod's files (dirs,
// run-sandbox, create, remove-dirs) and rest-ms/pod the rest of it (medians
// over the pods): where the growth with K is.
func BenchmarkBenchSimulated(b *testing.B) {
	places := []struct{ name, dir string }{{"disk", ""}}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		places = append(places, struct{ name, dir string }{"tmpfs", "/dev/shm"})
	}
	for _, place := range places {
		for _, k := range []int{1, 16} {
			b.Run(fmt.Sprintf("dirs=%s/K=%d", place.name, k), func(b *testing.B) {
				base := b.TempDir()
				if place.dir != "" {
					var err error
					if base, err = os.MkdirTemp(place.dir, "podstep-bench-"); err != nil {
						b.Fatal(err)
					}
					defer os.RemoveAll(base)
				}
				var own, cpu, files, rest float64
				n := 0
				for b.Loop() {
					var out, errb bytes.Buffer
					code := Execute([]string{"bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "-n", "32", "--warmup", "2",
						"--concurrency", fmt.Sprint(k), "-o", "json", "--root-dir", base + "/root", "--log-dir", base + "/logs"},
						strings.NewReader(""), &out, &errb)
					if code != 0 {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
					var res bench.Output
					if err := json.Unmarshal(out.Bytes(), &res); err != nil {
						b.Fatal(err)
					}
					own += res.Levels[0].Own.P50
					cpu += res.Levels[0].CPUPerPodMs
					f, r := fileSplit(b, res.Levels[0])
					files, rest = files+f, rest+r
					n++
				}
				b.ReportMetric(own/float64(n), "own-ms/pod")
				b.ReportMetric(cpu/float64(n), "cpu-ms/pod")
				b.ReportMetric(files/float64(n), "files-ms/pod")
				b.ReportMetric(rest/float64(n), "rest-ms/pod")
			})
		}
	}
}

// fileSplit is, over the pods of l, the median own time of the steps that
// touch the pod's files, added per pod, and the median of the rest.
func fileSplit(b *testing.B, l bench.Level) (files, rest float64) {
	b.Helper()
	n := len(l.Own.Samples)
	sum := make([]float64, n)
	found := 0
	for _, s := range l.OwnSteps {
		switch s.Name {
		case "dirs", "run-sandbox", "create", "remove-dirs":
		default:
			continue
		}
		if len(s.Samples) != n {
			b.Fatalf("own_steps %s: %d samples for %d pods", s.Name, len(s.Samples), n)
		}
		found++
		for i, v := range s.Samples {
			sum[i] += v
		}
	}
	if found != 4 || n == 0 {
		b.Fatalf("own_steps %+v: want dirs, run-sandbox, create and remove-dirs", l.OwnSteps)
	}
	others := make([]float64, n)
	for i := range sum {
		others[i] = l.Own.Samples[i] - sum[i]
	}
	return bench.Summarize("files", sum).P50, bench.Summarize("rest", others).P50
}
