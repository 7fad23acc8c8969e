// Package proxy is a transparent gRPC proxy for the CRI (`podstep proxy`):
// a kubelet pointed at its socket talks to the runtime behind it exactly as
// before, and podstep sees every call.
//
// Every method passes as raw bytes (a pass-through codec and
// grpc.UnknownServiceHandler), so methods podstep does not know, from a
// newer kubelet or runtime, pass too. Metadata (traceparent, ...) and the
// caller's deadline go upstream; headers, trailers, codes and error texts
// come back unchanged. Decoding a call for display is a side branch
// ([Observer]) that never changes what is forwarded. A [Gate] can hold a
// call before it goes upstream (`--hold`).
//
// Unary methods (every CRI method but GetContainerEvents) are forwarded
// with one Invoke; streaming ones, and methods the CRI descriptors do not
// name, are pumped in both directions.
package proxy
