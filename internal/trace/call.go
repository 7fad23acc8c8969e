package trace

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/podstep/podstep/internal/cri"
)

// propagator is what the kubelet's CRI client sends (k8s.io/cri-client
// remote_runtime.go: otelgrpc.WithPropagators(TraceContext, Baggage)).
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

var _ cri.Tracer = (*Run)(nil)

// StartCall opens a client span for one CRI call, under the running step's
// span (else the phase's, else the root), and returns ctx with the span's W3C
// trace context in its outgoing gRPC metadata. Attributes: the gRPC ones
// (rpc.system, rpc.service, rpc.method, rpc.grpc.status_code), the pod and
// container, the sandbox and container IDs the request names, and the
// request's size.
func (r *Run) StartCall(ctx context.Context, c cri.CallStart) (context.Context, func(cri.Call)) {
	r.mu.Lock()
	parent := r.root
	container := ""
	switch {
	case r.stepSpan != nil:
		parent, container = r.stepSpan, r.step.Container
	case r.phase != nil:
		parent = r.phase
	}
	r.mu.Unlock()

	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", cri.Service(c.Method)),
		attribute.String("rpc.method", c.Method),
		attribute.String("k8s.pod.name", r.pod.Name),
		attribute.String("k8s.namespace.name", r.pod.Namespace),
		attribute.Int("podstep.cri.request_size", c.Size))
	if container != "" {
		attrs = append(attrs, attribute.String("k8s.container.name", container))
	}
	attrs = idAttrs(attrs, c.Request)
	name := strings.TrimPrefix(c.FullMethod, "/")
	sctx, span := r.tracer.Start(oteltrace.ContextWithSpan(ctx, parent), name,
		oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(attrs...))
	return inject(sctx), func(call cri.Call) {
		code := call.Code()
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
		if call.Err != nil {
			// call.Err is masked by the client's redactor.
			span.SetStatus(codes.Error, code.String()+": "+call.ErrorMessage())
		}
		span.End(oteltrace.WithTimestamp(call.Start.Add(call.Duration)))
	}
}

// Inject puts the W3C trace context of ctx's span (traceparent, and baggage)
// into ctx's outgoing gRPC metadata, as the kubelet's CRI client sends it: for
// a command that forwards CRI calls with spans of its own (a proxy).
func Inject(ctx context.Context) context.Context { return inject(ctx) }

// inject puts the span's trace context into ctx's outgoing gRPC metadata.
func inject(ctx context.Context) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	propagator.Inject(ctx, metadataCarrier(md))
	return metadata.NewOutgoingContext(ctx, md)
}

// metadataCarrier is gRPC metadata as a propagation.TextMapCarrier.
type metadataCarrier metadata.MD

func (m metadataCarrier) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m metadataCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m metadataCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// idFields are the request fields that name what a CRI call acts on.
var idFields = []struct {
	field protoreflect.Name
	attr  string
}{
	{"pod_sandbox_id", "cri.pod_sandbox_id"},
	{"container_id", "cri.container_id"},
}

// idAttrs adds the sandbox and container IDs a request names, if any.
func idAttrs(attrs []attribute.KeyValue, req proto.Message) []attribute.KeyValue {
	if req == nil {
		return attrs
	}
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	for _, f := range idFields {
		fd := fields.ByName(f.field)
		if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
			continue
		}
		if v := m.Get(fd).String(); v != "" {
			attrs = append(attrs, attribute.String(f.attr, v))
		}
	}
	return attrs
}
