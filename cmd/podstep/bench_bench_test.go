package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkBenchSimulated runs `podstep bench --sim -n 32` at K=1 and
// K=16 pods at once, and reports podstep's own time per pod (the median
// over the pods) and the process CPU per pod (podstep and the in-process
// simulated runtime): the bar is own time at K=16 ≤ 2× K=1.
func BenchmarkBenchSimulated(b *testing.B) {
	for _, k := range []int{1, 16} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			root, logs := b.TempDir()+"/root", b.TempDir()+"/logs"
			var own, cpu float64
			n := 0
			for b.Loop() {
				var out, errb bytes.Buffer
				code := Execute([]string{"bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "-n", "32", "--warmup", "2",
					"--concurrency", fmt.Sprint(k), "-o", "json", "--root-dir", root, "--log-dir", logs}, strings.NewReader(""), &out, &errb)
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
