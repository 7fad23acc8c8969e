package main

import (
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/steps/stepstest"
)

// podSizeRun runs `podstep run --sim --auto` (the text output, to
// nowhere) on file in a process of its own and returns its exit code, its
// peak resident set (rusage maxrss, MB) and its CPU time (user + system).
func podSizeRun(tb testing.TB, file string) (code int, rssMB float64, cpu time.Duration) {
	tb.Helper()
	d := tb.TempDir()
	cmd := exec.Command(bin, "run", "--sim", "--auto", "-f", file, "--root-dir", d+"/root", "--log-dir", d+"/logs")
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		tb.Fatal(err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Skip("no rusage on this system")
	}
	if cmd.ProcessState.ExitCode() != 0 {
		tb.Logf("stderr: %s", stderr.String())
	}
	return cmd.ProcessState.ExitCode(), float64(ru.Maxrss) / 1024, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkRunPodSize runs `podstep run --sim --auto -f POD` in a process
// of its own on pods of 10, 100, 1,000 and 5,000 busybox containers and
// reports its peak RSS (rusage maxrss) and CPU time: both must grow
// linearly with the containers, and the 1,000-container run stay within
// 200 MB and 3 s (issue 34; before, 1,000 took 1.5 GB and 2,000 ran out
// of memory). ns/op is the wall time, which a loaded machine stretches:
// cpu-s/op is the steadier figure.
//
//	go test -run '^$' -bench RunPodSize -benchtime 3x ./cmd/podstep
func BenchmarkRunPodSize(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			file := stepstest.WideManifest(b, b.TempDir(), n)
			var rss, cpu float64
			for b.Loop() {
				code, r, c := podSizeRun(b, file)
				if code != 0 {
					b.Fatalf("exit %d", code)
				}
				rss, cpu = max(rss, r), cpu+c.Seconds()
			}
			b.ReportMetric(rss, "peak-rss-MB")
			b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
			b.ReportMetric(rss*1024/float64(n), "rss-KB/container")
		})
	}
}

// TestRunPodSizeMemory: `podstep run --sim --auto` of a 1,000-container
// pod peaks within 200 MB (rusage maxrss). It took 1.5 GB when each step
// kept a copy of the whole pod's status (issue 34).
func TestRunPodSizeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-container pod: not in -short")
	}
	file := stepstest.WideManifest(t, t.TempDir(), 1000)
	code, rss, cpu := podSizeRun(t, file)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	t.Logf("1,000 containers: peak RSS %.0f MB, CPU %s", rss, cpu.Round(time.Millisecond))
	if rss > 200 {
		t.Errorf("peak RSS %.0f MB, want ≤ 200 MB", rss)
	}
}
