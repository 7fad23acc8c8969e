package shadow

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStartStop is a shadow's cost on top of a replay: Start (config,
// network, the node's containerd up and answering its CRI Version, the
// images copied) then Stop (everything removed), on the real containerd at
// $PODSTEP_ENDPOINT (a harness: hack/containerd-up.sh). The cold cases
// keep no image cache (PODSTEP_SHADOW_CACHE_MB=0: every image copied);
// the warm ones start on the cache an untimed first shadow left. Run as
// root:
//
//	PODSTEP_ENDPOINT=unix:///var/lib/podstep-harness/run/containerd.sock \
//	  go test ./internal/shadow -run '^$' -bench StartStop -count 6
func BenchmarkStartStop(b *testing.B) {
	ep := os.Getenv("PODSTEP_ENDPOINT")
	if ep == "" || os.Geteuid() != 0 {
		b.Skip("needs root and PODSTEP_ENDPOINT: a real containerd (hack/containerd-up.sh)")
	}
	ctx := context.Background()
	node, err := Find(ctx, ep)
	if err != nil {
		b.Fatal(err)
	}
	hello := []string{"docker.io/library/busybox:1.35"}
	for _, bc := range []struct {
		name   string
		images []string
		warm   bool
	}{
		{"no-images", nil, false}, // the node's sandbox image is copied all the same
		{"hello", hello, false},
		{"hello-warm", hello, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base := filepath.Join(b.TempDir(), "shadows")
			if !bc.warm {
				b.Setenv(CacheEnv, "0")
			} else {
				s, err := Start(ctx, node, Options{Base: base, Images: bc.images, CgroupRoot: CgroupRoot("")})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			}
			var start, stop, prep, up, export, imp time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				s, err := Start(ctx, node, Options{Base: base, Images: bc.images, CgroupRoot: CgroupRoot("")})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := s.Stop(ctx); err != nil {
					b.Fatal(err)
				}
				if s.Warm != bc.warm {
					b.Fatalf("warm start %v, want %v", s.Warm, bc.warm)
				}
				start, stop, n = start+t1.Sub(t0), stop+time.Since(t1), n+1
				prep, up, export, imp = prep+s.Phases.Prepare, up+s.Phases.Up, export+s.Phases.Export, imp+s.Phases.Import
			}
			// Start's phases (Shadow.Phases).
			for _, m := range []struct {
				d    time.Duration
				unit string
			}{{prep, "prepare-ms/op"}, {up, "up-ms/op"}, {export, "export-wait-ms/op"}, {imp, "import-ms/op"}} {
				b.ReportMetric(float64(m.d.Milliseconds())/float64(n), m.unit)
			}
			// The two halves: Start (up, answering, images copied), Stop (all removed).
			b.ReportMetric(float64(start.Milliseconds())/float64(n), "start-ms/op")
			b.ReportMetric(float64(stop.Milliseconds())/float64(n), "stop-ms/op")
		})
	}
}

// BenchmarkStartStopInHost is the fleet runner's way (StartInHost): the
// same shadow started and stopped by a helper process (this test binary,
// TestMain) entered into the mount namespace of the runtime's process; its
// cost over BenchmarkStartStop is the helper's start and the namespace
// entry. Warm (the image cache an untimed first shadow left). Run as
// BenchmarkStartStop.
func BenchmarkStartStopInHost(b *testing.B) {
	ep := os.Getenv("PODSTEP_ENDPOINT")
	if ep == "" || os.Geteuid() != 0 {
		b.Skip("needs root and PODSTEP_ENDPOINT: a real containerd (hack/containerd-up.sh)")
	}
	ctx := context.Background()
	base := filepath.Join(b.TempDir(), "shadows")
	opts := Options{Base: base, Images: []string{"docker.io/library/busybox:1.35"}, CgroupRoot: CgroupRoot("")}
	// Warm: an untimed first shadow leaves the image cache.
	s, err := StartInHost(ctx, ep, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	var start, stop time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		s, err := StartInHost(ctx, ep, opts)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		start, stop, n = start+t1.Sub(t0), stop+time.Since(t1), n+1
	}
	b.ReportMetric(float64(start.Milliseconds())/float64(n), "start-ms/op")
	b.ReportMetric(float64(stop.Milliseconds())/float64(n), "stop-ms/op")
}
