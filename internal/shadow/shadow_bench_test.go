package shadow

import (
	"context"
	"os"
	"testing"
)

// BenchmarkStartStop is a shadow's cost on top of a replay: Start (config,
// network, the node's containerd up and answering its CRI Version, the
// images copied) then Stop (everything removed), on the real containerd at
// $PODSTEP_ENDPOINT (a harness: hack/containerd-up.sh). Run as root:
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
	base := b.TempDir()
	for _, bc := range []struct {
		name   string
		images []string
	}{
		{"no-images", nil},
		{"hello", []string{"docker.io/library/busybox:1.35"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				s, err := Start(ctx, node, Options{Base: base, Images: bc.images, CgroupRoot: CgroupRoot("")})
				if err != nil {
					b.Fatal(err)
				}
				if bc.images == nil {
					// The sandbox image of the node's config is copied too:
					// measure the runtime alone.
					_ = s
				}
				if err := s.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
