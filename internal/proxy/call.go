package proxy

import (
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Call is one call through the proxy, as bytes. The observer may read it
// from the hook it is given to; it must not change Request or Response.
type Call struct {
	// Seq numbers calls in the order they arrived, from 1.
	Seq uint64
	// Method is the full gRPC method, "/runtime.v1.RuntimeService/Version"
	// ("/csi.v1.Node/NodePublishVolume" through a CSI driver's socket).
	Method string
	// Via is the server's Via: "" for the CRI, a CSI driver's name for
	// calls through its socket.
	Via string
	// Streaming is true for a streaming method (or one the CRI does not
	// name), pumped rather than invoked: Request is its first message and
	// Response empty.
	Streaming bool
	// Request and Response are the messages as on the wire; Response is
	// nil when the call failed.
	Request, Response []byte
	// Err is the upstream's answer when it failed (a gRPC status error),
	// or why the call did not go upstream.
	Err error
	// Arrived is when the proxy got the call; Deadline the caller's
	// deadline (zero when none); Held how long a Gate kept it; Start when
	// it went upstream and Duration how long the upstream took.
	Arrived  time.Time
	Deadline time.Time
	Held     time.Duration
	Start    time.Time
	Duration time.Duration
}

// Name is the method's short name, "Version".
func (c *Call) Name() string { return MethodName(c.Method) }

// MethodName is the short name of a full gRPC method.
func MethodName(full string) string { return full[strings.LastIndexByte(full, '/')+1:] }

// unary lists the CRI's unary methods by full name, from the generated
// service descriptors of the cri-api podstep is built with, and the CSI
// services' (a driver's socket taken over: every CSI method is unary).
// Built on the first call, not in the package's init (issue 36: every
// podstep command runs the inits).
var unary = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, sd := range []struct {
		name    string
		methods []string
	}{
		{runtimeapi.RuntimeService_ServiceDesc.ServiceName, methodNames(runtimeapi.RuntimeService_ServiceDesc.Methods)},
		{runtimeapi.ImageService_ServiceDesc.ServiceName, methodNames(runtimeapi.ImageService_ServiceDesc.Methods)},
		{csipb.Node_ServiceDesc.ServiceName, methodNames(csipb.Node_ServiceDesc.Methods)},
		{csipb.Identity_ServiceDesc.ServiceName, methodNames(csipb.Identity_ServiceDesc.Methods)},
		{csipb.Controller_ServiceDesc.ServiceName, methodNames(csipb.Controller_ServiceDesc.Methods)},
	} {
		for _, n := range sd.methods {
			m["/"+sd.name+"/"+n] = true
		}
	}
	return m
})
