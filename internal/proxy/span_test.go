package proxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// TestSpanReplacesTraceContext: the Span hook sees the caller's
// traceparent, its metadata replaces the caller's in the call going
// upstream (unary and streaming), and its end runs after Done, once.
func TestSpanReplacesTraceContext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{{"unary", false}, {"stream", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			var sawIn string
			note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			n := func() int { mu.Lock(); defer mu.Unlock(); return len(order) }
			ep := start(t, echo(t), Hooks{
				Done: func(*Call) { note("done") },
				Span: func(ctx context.Context, c *Call) ([]string, func(*Call)) {
					md, _ := metadata.FromIncomingContext(ctx)
					if v := md.Get("traceparent"); len(v) > 0 {
						sawIn = v[0]
					}
					note("span")
					return []string{"traceparent", "00-proxy-span-01"}, func(*Call) { note("end") }
				},
			})
			conn := rawConn(t, ep)
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-kubelet-span-01"), 5*time.Second)
			defer cancel()
			var header metadata.MD
			if tc.stream {
				cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/podstep.future.v9.NewService/Chat")
				if err != nil {
					t.Fatal(err)
				}
				if err := cs.SendMsg(&frame{[]byte("x")}); err != nil {
					t.Fatal(err)
				}
				if err := cs.CloseSend(); err != nil {
					t.Fatal(err)
				}
				for cs.RecvMsg(&frame{}) == nil {
				}
				header, _ = cs.Header()
			} else {
				if err := conn.Invoke(ctx, "/podstep.future.v9.NewService/Ping", &frame{[]byte("x")}, &frame{}, grpc.Header(&header)); err != nil {
					t.Fatal(err)
				}
			}
			// The server's handler returns before end runs (deferred): wait.
			for deadline := time.Now().Add(2 * time.Second); n() < 3 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if sawIn != "00-kubelet-span-01" {
				t.Errorf("Span saw traceparent %q, want the caller's", sawIn)
			}
			if got := header.Get("traceparent-seen"); len(got) != 1 || got[0] != "00-proxy-span-01" {
				t.Errorf("upstream saw traceparent %q, want the span's only", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(order) != 3 || order[0] != "span" || order[1] != "done" || order[2] != "end" {
				t.Errorf("hooks ran %v, want span, done, end", order)
			}
		})
	}
}
