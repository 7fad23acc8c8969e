package main

import (
	"bufio"
	"errors"
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
// nowhere) on file in a process of its own, as a user would (the run's
// dirs where the simulated runtime makes them: session.SimBase), and
// returns its exit code, its peak resident set (rusage maxrss, MB) and its
// CPU time (user + system).
func podSizeRun(tb testing.TB, file string) (code int, rssMB float64, cpu time.Duration) {
	tb.Helper()
	cmd := exec.Command(bin, "run", "--sim", "--auto", "-f", file)
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
// pod peaks within 400 MB (rusage maxrss). It took 1.5 GB (1,413 MB
// measured) when each step kept a copy of the whole pod's status (issue
// 34). The bar of 200 MB is BenchmarkRunPodSize's, on a quiet machine
// (145-151 MB); beside the other packages' tests on 2 cores the same run
// peaked at 321 MB (the runtime returns freed memory to the OS later when
// it is short of CPU), so the test's guard is twice the bar: still a
// failure for the quadratic code.
func TestRunPodSizeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-container pod: not in -short")
	}
	if raceDetector {
		t.Skip("peak RSS means nothing under the race detector (its shadow memory): the plain unit run checks it")
	}
	file := stepstest.WideManifest(t, t.TempDir(), 1000)
	// Over the guard, once more: a loaded machine's collector falls behind
	// (462 MB seen once beside the other tests); the quadratic code is over
	// it every time (1.4 GB).
	rss := 0.0
	for try := 0; try < 2 && (try == 0 || rss > 400); try++ {
		code, r, cpu := podSizeRun(t, file)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		t.Logf("1,000 containers: peak RSS %.0f MB, CPU %s", r, cpu.Round(time.Millisecond))
		if try == 0 || r < rss {
			rss = r
		}
	}
	if rss > 400 {
		t.Errorf("peak RSS %.0f MB, want ≤ 400 MB (200 MB on a quiet machine: BenchmarkRunPodSize)", rss)
	}
}

// TestSIGTERMHugePod: SIGTERM to `podstep run --sim --auto` of a
// 20,000-container pod (a 1.4 MB manifest, under the API server's 3 MiB)
// while it starts containers ends the run, torn down, within 30 s (5 s
// measured on a loaded 2-core machine). The summary rebuilt the requests
// of every step not run, each a walk of the pod: it ran for minutes.
func TestSIGTERMHugePod(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20,000-container pod: not in -short")
	}
	d := t.TempDir()
	file := stepstest.WideManifest(t, d, 20000)
	cmd := exec.Command(bin, "run", "--sim", "--auto", "-o", "short", "-f", file, "--root-dir", d+"/root", "--log-dir", d+"/logs")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	sc := bufio.NewScanner(out)
	started := 0
	for sc.Scan() && started < 50 {
		if strings.Contains(sc.Text(), "started [StartContainer]") {
			started++
		}
	}
	if started < 50 {
		t.Fatalf("the run ended before 50 containers started; stderr: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	go func() { _, _ = io.Copy(io.Discard, out) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM; stderr: %s", stderr.String())
	}
	t.Logf("ended %s after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d, want 143 (SIGTERM, torn down); stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted: torn down") {
		t.Errorf("stderr = %q, want it to say interrupted: torn down", stderr.String())
	}
}
