package trace

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/podstep/podstep/internal/proxy"
)

const (
	kubeletTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	kubeletSpan  = "00f067aa0ba902b7"
)

// TestProxySpans: the proxy's span per call, its parent (the kubelet's
// traceparent, else the pod's span, else none), what it carries upstream,
// and its attributes.
func TestProxySpans(t *testing.T) {
	hello := ProxyCall{Namespace: "default", Name: "hello", UID: "u1", Container: "main", Step: "create/main", Stage: "main"}
	for _, tc := range []struct {
		name        string
		traceparent string
		calls       []ProxyCall // one call per entry, same pod or node-level
		methods     []string
		err         error
		wantSpans   []string // ended span names, in order
		wantParent  string   // "kubelet", "pod" or "" (no span)
		wantMD      bool
	}{
		{name: "kubelet traces", traceparent: "00-" + kubeletTrace + "-" + kubeletSpan + "-01",
			calls: []ProxyCall{hello}, methods: []string{"CreateContainer"},
			wantSpans: []string{"runtime.v1.RuntimeService/CreateContainer"}, wantParent: "kubelet", wantMD: true},
		{name: "kubelet traces a node-level call", traceparent: "00-" + kubeletTrace + "-" + kubeletSpan + "-01",
			calls: []ProxyCall{{}}, methods: []string{"ListPodSandbox"},
			wantSpans: []string{"runtime.v1.RuntimeService/ListPodSandbox"}, wantParent: "kubelet", wantMD: true},
		{name: "kubelet does not sample", traceparent: "00-" + kubeletTrace + "-" + kubeletSpan + "-00",
			calls: []ProxyCall{hello}, methods: []string{"CreateContainer"}, wantMD: true},
		{name: "no kubelet trace: under the pod's span, which RemovePodSandbox ends",
			calls: []ProxyCall{hello, hello}, methods: []string{"StartContainer", "RemovePodSandbox"},
			wantSpans:  []string{"runtime.v1.RuntimeService/StartContainer", "runtime.v1.RuntimeService/RemovePodSandbox", SpanProxyPod},
			wantParent: "pod", wantMD: true},
		{name: "no kubelet trace, node-level: no span",
			calls: []ProxyCall{{}}, methods: []string{"ListContainers"}},
		{name: "failed call", traceparent: "00-" + kubeletTrace + "-" + kubeletSpan + "-01",
			calls: []ProxyCall{hello}, methods: []string{"CreateContainer"},
			err:       status.Error(codes.Unknown, "auth s3cret failed"),
			wantSpans: []string{"runtime.v1.RuntimeService/CreateContainer"}, wantParent: "kubelet", wantMD: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			byseq := map[uint64]ProxyCall{}
			p := &Proxy{tracer: tp.Tracer(scope), pods: map[string]oteltrace.Span{},
				lookup: func(seq uint64) (ProxyCall, bool) { pc, ok := byseq[seq]; return pc, ok },
				errMsg: func(err error) string { return "auth ***** failed" }}
			ctx := context.Background()
			if tc.traceparent != "" {
				ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("traceparent", tc.traceparent))
			}
			for i, pc := range tc.calls {
				c := &proxy.Call{Seq: uint64(i + 1), Method: "/runtime.v1.RuntimeService/" + tc.methods[i],
					Request: []byte("request with s3cret"), Arrived: time.Now()}
				byseq[c.Seq] = pc
				md, end := p.Span(ctx, c)
				if got := len(md) > 0; got != tc.wantMD {
					t.Fatalf("metadata upstream %v, want some: %v", md, tc.wantMD)
				}
				if tc.wantMD && (md[0] != "traceparent" || len(md[1]) != 55 || md[1][3:35] != kubeletTrace && tc.traceparent != "") {
					t.Errorf("metadata upstream %v, want a traceparent of the kubelet's trace", md)
				}
				if tc.wantMD && md[1][36:52] == kubeletSpan {
					t.Errorf("upstream traceparent %s is the kubelet's span, want the proxy's", md[1])
				}
				if end != nil {
					c.Err, c.Response = tc.err, []byte("resp")
					end(c)
				}
			}
			p.End()
			ended := rec.Ended()
			var names []string
			for _, s := range ended {
				names = append(names, s.Name())
			}
			if len(names) != len(tc.wantSpans) {
				t.Fatalf("spans %q, want %q", names, tc.wantSpans)
			}
			for i := range names {
				if names[i] != tc.wantSpans[i] {
					t.Fatalf("spans %q, want %q", names, tc.wantSpans)
				}
			}
			if len(ended) == 0 {
				return
			}
			s := ended[0]
			switch tc.wantParent {
			case "kubelet":
				if s.Parent().TraceID().String() != kubeletTrace || s.Parent().SpanID().String() != kubeletSpan || !s.Parent().IsRemote() {
					t.Errorf("parent %v, want the kubelet's span", s.Parent())
				}
			case "pod":
				pod := ended[len(ended)-1]
				for _, c := range ended[:len(ended)-1] {
					if c.Parent().SpanID() != pod.SpanContext().SpanID() {
						t.Errorf("%s: parent %v, want the pod's span", c.Name(), c.Parent().SpanID())
					}
				}
				if v := attr(pod, "k8s.pod"); v != "default/hello" {
					t.Errorf("pod span k8s.pod %q", v)
				}
			}
			if s.SpanKind() != oteltrace.SpanKindServer {
				t.Errorf("kind %v, want server", s.SpanKind())
			}
			want := map[string]string{"rpc.service": "runtime.v1.RuntimeService", "rpc.method": tc.methods[0],
				"podstep.cri.request_size": "19", "rpc.grpc.status_code": "0"}
			if tc.calls[0].UID != "" {
				want["k8s.pod.name"], want["k8s.container.name"], want["podstep.step.name"], want["podstep.stage"] = "hello", "main", "create/main", "main"
			}
			if tc.err != nil {
				want["rpc.grpc.status_code"] = "2"
				if s.Status().Description != "Unknown: auth ***** failed" {
					t.Errorf("status %q, want the masked message", s.Status().Description)
				}
			}
			for k, v := range want {
				if got := attr(s, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, kv := range s.Attributes() {
				if v := kv.Value.String(); len(v) >= 6 && strings.Contains(v, "s3cret") {
					t.Errorf("attribute %s holds the secret: %q", kv.Key, v)
				}
			}
		})
	}
}
