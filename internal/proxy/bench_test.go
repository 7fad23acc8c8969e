package proxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/trace"
	"github.com/podstep/podstep/internal/watch"
)

// BenchmarkAddedLatency measures what the proxy adds to a unary call, with
// the watcher decoding and attributing every call as `podstep proxy` does:
// Version and ListContainers in turn, at 500 calls/s (bench-proxy.sh's
// PODSTEP_BENCH_RATE), each sent once directly and once through the proxy,
// interleaved. It reports the median and 99th percentile of the direct and
// proxied latencies and of what the proxy added (the proxied percentile
// minus the direct one). The runtime is PODSTEP_BENCH_ENDPOINT (the harness
// containerd), else the simulated runtime; PODSTEP_BENCH_NO_WATCH=1 leaves
// the watcher out. PODSTEP_BENCH_OTLP=URL adds `--otlp-endpoint URL`'s span
// per call (the OTLP/HTTP collector at URL gets them), and every call then
// carries a sampled traceparent, as from a kubelet that traces (both ways,
// so a runtime that traces does the same work for both). Run:
// hack/bench-proxy.sh.
func BenchmarkAddedLatency(b *testing.B) {
	upstream := os.Getenv("PODSTEP_BENCH_ENDPOINT")
	dir, err := os.MkdirTemp("", "pxb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if upstream == "" {
		s, err := sim.Start(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Stop()
		upstream = s.Endpoint()
	}
	w := watch.New(watch.Options{})
	defer w.Close()
	hooks := w.Hooks()
	if os.Getenv("PODSTEP_BENCH_NO_WATCH") != "" {
		hooks = proxy.Hooks{} // the bare proxy: what the watcher adds is the difference
	}
	ctx := context.Background()
	if u := os.Getenv("PODSTEP_BENCH_OTLP"); u != "" {
		cfg, err := trace.Options{Endpoint: u}.Resolve(func(string) string { return "" })
		if err != nil {
			b.Fatal(err)
		}
		x, err := trace.SetupServer(ctx, cfg, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer x.Shutdown(ctx, os.Stderr)
		hooks.Span = x.Proxy(func(seq uint64) (trace.ProxyCall, bool) {
			a, ok := w.Attribution(seq)
			return trace.ProxyCall{Namespace: a.Namespace, Name: a.Name, UID: a.UID, Container: a.Container, Step: a.Step, Stage: string(a.Stage)}, ok
		}, w.ErrorMessage).Hook()
		ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}
	srv, err := proxy.New(upstream, hooks)
	if err != nil {
		b.Fatal(err)
	}
	ep := "unix://" + filepath.Join(dir, "p.sock")
	l, err := proxy.Listen(ep)
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }() // nil once stopped; a failure shows as failed calls
	defer srv.Stop()
	direct, err := cri.Dial(upstream, "", cri.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	via, err := cri.Dial(ep, "", cri.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer via.Close()

	rate := 500
	if s := os.Getenv("PODSTEP_BENCH_RATE"); s != "" {
		if _, err := fmt.Sscan(s, &rate); err != nil {
			b.Fatal(err)
		}
	}
	calls := 2000
	call := func(c *cri.Client, i int) time.Duration {
		t := time.Now()
		var err error
		if i%2 == 0 {
			_, err = c.Version(ctx)
		} else {
			_, err = c.ListContainers(ctx, &runtimeapi.ContainerFilter{})
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(t)
	}
	for i := range 50 { // warm both connections
		call(direct, i)
		call(via, i)
	}
	b.ResetTimer()
	for range b.N {
		var d, p []time.Duration
		tick := time.NewTicker(time.Second / time.Duration(rate))
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

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
