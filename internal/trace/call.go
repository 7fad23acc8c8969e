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

	// The attributes are set once, at the end, with the status code: one
	// allocation of the span's attribute list instead of growing it.
	sctx, span := r.tracer.Start(oteltrace.ContextWithSpan(ctx, parent), strings.TrimPrefix(c.FullMethod, "/"),
		oteltrace.WithSpanKind(oteltrace.SpanKindClient))
	return inject(sctx), func(call cri.Call) {
		code := call.Code()
		attrs := make([]attribute.KeyValue, 0, 11)
		attrs = append(attrs,
			attribute.String("rpc.system", "grpc"),
			attribute.String("rpc.service", cri.Service(c.Method)),
			attribute.String("rpc.method", c.Method),
			attribute.Int("rpc.grpc.status_code", int(code)),
			attribute.String("k8s.pod.name", r.pod.Name),
			attribute.String("k8s.namespace.name", r.pod.Namespace),
			attribute.Int("podstep.cri.request_size", c.Size))
		if container != "" {
			attrs = append(attrs, attribute.String("k8s.container.name", container))
		}
		span.SetAttributes(idAttrs(attrs, c.Request)...)
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

// inject adds the span's trace context to ctx's outgoing gRPC metadata.
func inject(ctx context.Context) context.Context {
	var kv kvCarrier
	propagator.Inject(ctx, &kv)
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// kvCarrier collects what a propagator injects as metadata key/value pairs
// (keys lower-case, as gRPC metadata keys are).
type kvCarrier []string

func (c *kvCarrier) Get(key string) string {
	for i := 0; i+1 < len(*c); i += 2 {
		if (*c)[i] == key {
			return (*c)[i+1]
		}
	}
	return ""
}

func (c *kvCarrier) Set(key, value string) { *c = append(*c, strings.ToLower(key), value) }

func (c *kvCarrier) Keys() []string {
	var out []string
	for i := 0; i < len(*c); i += 2 {
		out = append(out, (*c)[i])
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
