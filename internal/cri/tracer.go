package cri

import (
	"context"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Tracer follows every call a Client sends, for tracing (internal/trace
// gives one). It keeps OpenTelemetry out of this package: a Client with no
// Tracer does no tracing work at all.
type Tracer interface {
	// StartCall is called just before a call is sent, on the goroutine that
	// sends it. The context it returns is the one the call is sent with: it
	// may carry gRPC metadata (a W3C traceparent) for the runtime. end is
	// called once with the finished call.
	StartCall(ctx context.Context, c CallStart) (_ context.Context, end func(Call))
}

// CallStart is what a Tracer learns of a call before it is sent.
type CallStart struct {
	// Method is the CRI method, e.g. "RunPodSandbox".
	Method string
	// FullMethod is the gRPC method, e.g.
	// "/runtime.v1.RuntimeService/RunPodSandbox".
	FullMethod string
	// Request is the redacted request.
	Request proto.Message
	// Size is the request's size on the wire (the unredacted message), in bytes.
	Size int
}

// SetTracer makes t follow every call sent from now on; nil stops tracing.
func (c *Client) SetTracer(t Tracer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracer = t
}

// imageMethods are the CRI methods of the ImageService; every other one
// belongs to the RuntimeService.
var imageMethods = map[string]bool{
	"ListImages": true, "ImageStatus": true, "PullImage": true, "RemoveImage": true, "ImageFsInfo": true,
}

// Service names the gRPC service a method belongs to:
// "runtime.v1.ImageService" or "runtime.v1.RuntimeService", or the
// service a method was registered with (RegisterService: "csi.v1.Node").
func Service(method string) string {
	if s := foreignService(method); s != "" {
		return s
	}
	if imageMethods[method] {
		return "runtime.v1.ImageService"
	}
	return "runtime.v1.RuntimeService"
}

// FullMethod is the gRPC method name of a CRI method, as it goes on the
// wire: "/runtime.v1.RuntimeService/RunPodSandbox".
func FullMethod(method string) string {
	if strings.HasPrefix(method, "/") {
		return method
	}
	return "/" + Service(method) + "/" + method
}
