package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkBenchSimulated runs `podstep bench --sim -n 32` at K=1 and
// K=16 pods at once and reports podstep's own time per pod (the median
// over the pods) and podstep's CPU per pod (the simulated runtime runs in
// a process of its own): the bar is own time at K=16 ≤ 2× K=1. The pods'
// dirs go on the disk (the test's temp dir), then, where there is one, on
// tmpfs (/dev/shm): on disk, making and removing them is most of podstep's
// own time, and the filesystem serialises it.
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
				var own, cpu float64
				n := 0
				for b.Loop() {
					var out, errb bytes.Buffer
					code := Execute([]string{"bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "-n", "32", "--warmup", "2",
						"--concurrency", fmt.Sprint(k), "-o", "json", "--root-dir", base + "/root", "--log-dir", base + "/logs"},
						strings.NewReader(""), &out, &errb)
					if code != 0 {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
					var res benchOutput
					if err := json.Unmarshal(out.Bytes(), &res); err != nil {
						b.Fatal(err)
					}
					own += res.Levels[0].Own.P50
					cpu += res.Levels[0].CPUPerPodMs
					n++
				}
				b.ReportMetric(own/float64(n), "own-ms/pod")
				b.ReportMetric(cpu/float64(n), "cpu-ms/pod")
			})
		}
	}
}
