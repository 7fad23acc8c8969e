package cri

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Calls of other gRPC services. The kubelet's volume work talks to CSI
// drivers (csi.v1.Node) in the same pod sync as its CRI calls; podstep
// records those calls as Calls of the same Client, so that each shows in
// the step that made it, numbered with the CRI calls, in every frontend.
// A package that sends such calls (internal/csi) registers its service's
// methods and a masker for its secret fields, from an init function.

var foreign struct {
	sync.RWMutex
	services map[string]string     // method → service, e.g. "NodeStageVolume" → "csi.v1.Node"
	maskers  []func(proto.Message) // run on every redacted copy
}

// RegisterService says that methods belong to the gRPC service (a full
// name, "csi.v1.Node"), for Service, FullMethod and the decoding of
// recorded calls. Method names must not be CRI's.
func RegisterService(service string, methods ...string) {
	foreign.Lock()
	defer foreign.Unlock()
	if foreign.services == nil {
		foreign.services = map[string]string{}
	}
	for _, m := range methods {
		foreign.services[m] = service
	}
}

// RegisterMasker adds fn to what Redactor.Redact does to every copy it
// makes: fn masks, in place, the secret fields of another service's
// messages (CSI's csi_secret fields) and leaves other messages alone.
func RegisterMasker(fn func(proto.Message)) {
	foreign.Lock()
	defer foreign.Unlock()
	foreign.maskers = append(foreign.maskers, fn)
}

// foreignService is the registered service of method, "" for CRI's.
func foreignService(method string) string {
	foreign.RLock()
	defer foreign.RUnlock()
	return foreign.services[method]
}

// IsCRI says whether method is a CRI method (not one of a registered
// service's: a CSI driver's).
func IsCRI(method string) bool { return foreignService(method) == "" }

// runMaskers applies the registered maskers to m.
func runMaskers(m proto.Message) {
	foreign.RLock()
	fns := foreign.maskers
	foreign.RUnlock()
	for _, fn := range fns {
		fn(m)
	}
}

// ProtoPackage is the proto package of method's service: "runtime.v1" for
// CRI's, "csi.v1" for a registered csi.v1.Node method. Recorded requests
// decode as ProtoPackage(m)+"."+m+"Request".
func ProtoPackage(method string) string {
	s := Service(method)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return s[:i]
		}
	}
	return s
}

// Invoke sends one call of a registered service through fn, with timeout,
// and records it as the client's own calls are: the next Seq, redacted
// (with the registered maskers), to the OnStart and OnCall hooks and the
// Tracer. The error of a failed call is an *Error.
func Invoke[Req, Resp proto.Message](ctx context.Context, c *Client, method string, timeout time.Duration, req Req,
	fn func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	return invoke(ctx, c, method, timeout, req, fn)
}
