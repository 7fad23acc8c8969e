package steps_test

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// podSizes are the pod sizes (containers) the pod-size benchmark runs.
var podSizes = []int{10, 100, 1000, 5000}

// runWide runs a pod of n containers through the engine on the simulated
// runtime, creation then teardown, with the --auto text printer
// subscribed (writing to io.Discard), as `podstep run --sim --auto` does.
func runWide(tb testing.TB, file string) {
	tb.Helper()
	r := stepstest.New(tb, file, nil)
	p := report.New(io.Discard, report.Text)
	p.SetPod(r.Bundle.Pod.Name)
	r.Engine.SubscribeWithoutPod(p.Observe)
	stepstest.Through(tb, r.Engine)
	if _, failed := r.Engine.Failed(); failed {
		tb.Fatal("the pod failed")
	}
}

// BenchmarkPodSize runs pods of 10, 100, 1,000 and 5,000 containers (each
// a busybox that sleeps) through the engine on the simulated runtime, with
// the --auto printer: the time and bytes allocated per run must grow
// linearly with the containers (issue 34: they grew with the square).
// allocated-MB/op is B/op in MB, and B/container is B/op per container,
// which stays flat when the growth is linear.
//
//	go test -run '^$' -bench PodSize -benchtime 3x ./internal/steps/
func BenchmarkPodSize(b *testing.B) {
	for _, n := range podSizes {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			file := stepstest.WideManifest(b, b.TempDir(), n)
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				runWide(b, file)
			}
			runtime.ReadMemStats(&after)
			per := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(per/1e6, "allocated-MB/op")
			b.ReportMetric(per/float64(n), "B/container")
		})
	}
}

// allocated is the bytes allocated by running file through runWide.
func allocated(t *testing.T, file string) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runWide(t, file)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestPodSizeLinear: a pod of 1,000 containers allocates less than 15
// times what one of 100 does (linear: 10 times; measured 9.6). Each step
// used to copy the whole pod's status (issue 34): 27 times then, 1.7 GB.
func TestPodSizeLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-container pod: not in -short")
	}
	dir := t.TempDir()
	small := allocated(t, stepstest.WideManifest(t, dir, 100))
	big := allocated(t, stepstest.WideManifest(t, dir, 1000))
	ratio := float64(big) / float64(small)
	t.Logf("100 containers: %.1f MB allocated, 1,000: %.1f MB (%.1fx)", float64(small)/1e6, float64(big)/1e6, ratio)
	if ratio >= 15 {
		t.Errorf("1,000 containers allocate %.1fx what 100 do, want < 15x (linear is 10x)", ratio)
	}
}
