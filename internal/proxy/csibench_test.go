package proxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/volume"
	"github.com/podstep/podstep/internal/watch"
)

// BenchmarkCSIAddedLatency measures what `podstep proxy --csi` adds to a
// kubelet's CSI call, as BenchmarkAddedLatency does for the CRI: a driver's
// socket (csitest's node server, a real gRPC server) taken over
// (proxy.TakeOver), its calls decoded, redacted and attributed by the
// watcher; NodeGetCapabilities and a NodePublishVolume of a new volume
// (a step of the pod its pod info names) with secrets and a
// service-account token, in turn, at 500 calls/s, each sent
// once to the driver's moved socket directly and once through the proxy,
// interleaved. It reports the median and 99th percentile of both and of
// what the proxy added. PODSTEP_BENCH_NO_WATCH=1 leaves the watcher out.
func BenchmarkCSIAddedLatency(b *testing.B) {
	node := csitest.Serve(b, &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}})
	sock := strings.TrimPrefix(node.Endpoint, "unix://")
	markers, err := os.MkdirTemp("", "pxm")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(markers)
	t, err := proxy.TakeOver("bench.csi", sock, markers)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = t.Restore() }()
	w := watch.New(watch.Options{})
	defer w.Close()
	hooks := w.Hooks()
	if os.Getenv("PODSTEP_BENCH_NO_WATCH") != "" {
		hooks = proxy.Hooks{} // the bare proxy: what the watcher adds is the difference
	}
	srv, err := proxy.New(t.Upstream, hooks)
	if err != nil {
		b.Fatal(err)
	}
	srv.Via = "bench.csi"
	go func() { _ = srv.Serve(t.Listener) }()
	defer srv.Stop()
	dial := func(p string) csipb.NodeClient {
		conn, err := grpc.NewClient("unix://"+p, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Close() })
		return csipb.NewNodeClient(conn)
	}
	direct, via := dial(t.Moved), dial(sock)
	podDir := filepath.Join(os.TempDir(), "podstep-csibench", "pods", "uid-bench")
	defer os.RemoveAll(filepath.Join(os.TempDir(), "podstep-csibench"))
	publish := &csipb.NodePublishVolumeRequest{VolumeId: "vol-bench",
		StagingTargetPath: "/var/lib/kubelet/plugins/kubernetes.io/csi/bench.csi/abc/globalmount",
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}},
		Secrets: map[string]string{"key": "Publish-Secret-2m7x"},
		VolumeContext: map[string]string{csi.PodNameKey: "web", csi.PodNamespaceKey: "default", csi.PodUIDKey: "uid-bench",
			csi.ServiceAccountKey: "default", csi.EphemeralKey: "false", "size": "1Gi",
			volume.TokensKey: `{"":{"token":"eyJhbGciOiJSUzI1NiJ9.bench-token.sig","expirationTimestamp":"2026-11-29T16:00:00Z"}}`}}
	ctx := context.Background()
	n := 0
	call := func(c csipb.NodeClient, i int) time.Duration {
		s := time.Now()
		var err error
		if i%2 == 0 {
			_, err = c.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
		} else {
			// A new volume each time: a step of the pod, not a republish.
			n++
			req := proto.Clone(publish).(*csipb.NodePublishVolumeRequest)
			req.VolumeId, req.TargetPath = fmt.Sprintf("vol-%d", n), csi.TargetPath(podDir, fmt.Sprintf("pv-%d", n))
			_, err = c.NodePublishVolume(ctx, req)
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(s)
	}
	for i := range 50 {
		call(direct, i)
		call(via, i)
	}
	const rate, calls = 500, 2000
	b.ResetTimer()
	for range b.N {
		var d, p []time.Duration
		tick := time.NewTicker(time.Second / rate)
		for i := range calls {
			<-tick.C
			if i%2 == 0 {
				d = append(d, call(direct, i/2))
			} else {
				p = append(p, call(via, i/2))
			}
		}
		tick.Stop()
		dp50, dp99 := pct(d, 50), pct(d, 99)
		pp50, pp99 := pct(p, 50), pct(p, 99)
		b.ReportMetric(ms(dp50), "direct-p50-ms")
		b.ReportMetric(ms(dp99), "direct-p99-ms")
		b.ReportMetric(ms(pp50), "proxy-p50-ms")
		b.ReportMetric(ms(pp99), "proxy-p99-ms")
		b.ReportMetric(ms(pp50-dp50), "added-p50-ms")
		b.ReportMetric(ms(pp99-dp99), "added-p99-ms")
	}
}
