package trace

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/podstep/podstep/internal/proxy"
)

// SpanProxyPod groups the spans of one pod's calls through the proxy when
// the kubelet sends no trace context of its own (it does not trace).
const SpanProxyPod = "podstep proxy pod"

// ProxyCall is what podstep proxy's watcher knows of a call, for its span.
type ProxyCall struct {
	// Namespace, Name and UID name the pod; empty for a node-level call.
	Namespace, Name, UID string
	// Container, Step and Stage: the container, and podstep's step and
	// stage, the call belongs to ("" when none).
	Container, Step, Stage string
}

// Proxy makes one span per CRI call through podstep proxy: its Span is the
// proxy's Hooks.Span.
//
// A call's span is a server span (the proxy serves the kubelet's call; the
// kubelet's otelgrpc client span, k8s.io/cri-client remote_runtime.go, is
// the client side), named as the kubelet's CRI spans are
// ("runtime.v1.RuntimeService/RunPodSandbox"). Its parent is the span in the
// trace context the kubelet sent (traceparent: a kubelet with tracing on),
// whose sampling decision it follows; without one, a pod's calls go under a
// span per pod (SpanProxyPod, open from the pod's first call to its
// RemovePodSandbox or the proxy's end), and node-level calls (the PLEG's
// polling, ~2 a second) get no span. The call goes upstream with the span's
// trace context in place of the kubelet's, so a runtime that traces
// (containerd 2.x) nests its spans under the proxy's.
//
// Only names go into spans: pod, container, step, method, sizes, the gRPC
// code and the error message as the watcher masks it; never a request.
type Proxy struct {
	tracer oteltrace.Tracer
	lookup func(seq uint64) (ProxyCall, bool)
	errMsg func(error) string

	spans atomic.Int64 // calls' spans recorded

	mu   sync.Mutex
	pods map[string]oteltrace.Span // by UID
}

// Spans is how many calls' spans were recorded (sampled) so far.
func (p *Proxy) Spans() int64 {
	if p == nil {
		return 0
	}
	return p.spans.Load()
}

// Proxy returns the span maker of podstep proxy: lookup says what the
// watcher made of a call (between the Arrived and Done hooks), errMsg masks
// an error's message. Safe on a nil Exporter: it returns nil, whose Hook is
// nil.
func (x *Exporter) Proxy(lookup func(seq uint64) (ProxyCall, bool), errMsg func(error) string) *Proxy {
	if x == nil {
		return nil
	}
	return &Proxy{tracer: x.tracer, lookup: lookup, errMsg: errMsg, pods: map[string]oteltrace.Span{}}
}

// Hook is p.Span as a proxy hook, nil when p is.
func (p *Proxy) Hook() func(context.Context, *proxy.Call) ([]string, func(*proxy.Call)) {
	if p == nil {
		return nil
	}
	return p.Span
}

// Span opens call c's span (see Proxy) and returns the metadata that
// carries its trace context upstream, and the function that ends it.
func (p *Proxy) Span(ctx context.Context, c *proxy.Call) ([]string, func(*proxy.Call)) {
	pc, _ := p.lookup(c.Seq)
	md, _ := metadata.FromIncomingContext(ctx)
	pctx := propagator.Extract(context.Background(), mdCarrier(md))
	if !oteltrace.SpanContextFromContext(pctx).IsValid() {
		if pc.UID == "" {
			return nil, nil
		}
		pctx = oteltrace.ContextWithSpan(pctx, p.podSpan(pc, c.Arrived))
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", service(c.Method)),
		attribute.String("rpc.method", c.Name()),
		attribute.Int("podstep.cri.request_size", len(c.Request)))
	if pc.UID != "" {
		attrs = append(attrs,
			attribute.String("k8s.pod.name", pc.Name),
			attribute.String("k8s.namespace.name", pc.Namespace),
			attribute.String("k8s.pod.uid", pc.UID))
	}
	if pc.Container != "" {
		attrs = append(attrs, attribute.String("k8s.container.name", pc.Container))
	}
	if pc.Step != "" {
		attrs = append(attrs, attribute.String("podstep.step.name", pc.Step), attribute.String("podstep.stage", pc.Stage))
	}
	sctx, span := p.tracer.Start(pctx, strings.TrimPrefix(c.Method, "/"),
		oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithTimestamp(c.Arrived),
		oteltrace.WithAttributes(attrs...))
	if span.IsRecording() {
		p.spans.Add(1)
	}
	var kv kvCarrier
	propagator.Inject(sctx, &kv)
	return kv, func(c *proxy.Call) {
		code := status.Code(c.Err)
		end := []attribute.KeyValue{
			attribute.Int("rpc.grpc.status_code", int(code)),
			attribute.Int("podstep.cri.response_size", len(c.Response)),
		}
		if c.Held > 0 {
			end = append(end, attribute.Float64("podstep.proxy.held_ms", float64(c.Held)/float64(time.Millisecond)))
		}
		span.SetAttributes(end...)
		if c.Err != nil {
			span.SetStatus(codes.Error, code.String()+": "+p.errMsg(c.Err))
		}
		span.End()
		if c.Err == nil && pc.UID != "" && c.Name() == "RemovePodSandbox" {
			p.endPod(pc.UID)
		}
	}
}

// podSpan is the open span of the pod's calls, started at its first.
func (p *Proxy) podSpan(pc ProxyCall, at time.Time) oteltrace.Span {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.pods[pc.UID]; s != nil {
		return s
	}
	_, s := p.tracer.Start(context.Background(), SpanProxyPod, oteltrace.WithTimestamp(at),
		oteltrace.WithAttributes(podAttrs(Pod{Namespace: pc.Namespace, Name: pc.Name, UID: pc.UID})...))
	p.pods[pc.UID] = s
	return s
}

func (p *Proxy) endPod(uid string) {
	p.mu.Lock()
	s := p.pods[uid]
	delete(p.pods, uid)
	p.mu.Unlock()
	if s != nil {
		s.End()
	}
}

// End ends the pods' spans still open (the proxy is stopping).
func (p *Proxy) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, s := range p.pods {
		s.End()
		delete(p.pods, uid)
	}
}

// mdCarrier reads a trace context from incoming gRPC metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// service is the gRPC service of a full method: "runtime.v1.RuntimeService".
func service(full string) string {
	if i := strings.LastIndexByte(full, '/'); i > 0 {
		return strings.TrimPrefix(full[:i], "/")
	}
	return ""
}
