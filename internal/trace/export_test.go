package trace

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestDeadCollector: spans for a collector that is not there cost at most
// the exporter's timeout at Shutdown, and one warning line, for both
// protocols.
func TestDeadCollector(t *testing.T) {
	// A loopback port nobody listens on: bound, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			cfg, err := Options{Endpoint: "http://" + addr, Protocol: proto}.Resolve(func(k string) string {
				if k == EnvTimeout {
					return "700"
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			x, err := Setup(context.Background(), cfg, "test")
			if err != nil {
				t.Fatal(err)
			}
			run := x.StartRun(context.Background(), Pod{Namespace: "default", Name: "p"})
			run.End(0)
			var out bytes.Buffer
			start := time.Now()
			x.Shutdown(context.Background(), &out)
			took := time.Since(start)
			if took > cfg.Timeout+500*time.Millisecond {
				t.Errorf("Shutdown took %s, over the exporter's timeout %s", took, cfg.Timeout)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "podstep: warning: traces not exported to http://"+addr) {
				t.Errorf("stderr = %q, want one warning line", out.String())
			}
		})
	}
}
