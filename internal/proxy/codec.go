package proxy

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as the bytes on the wire.
type frame struct{ payload []byte }

// codec passes messages through as bytes: what the kubelet sent is what
// the runtime gets, field for field, unknown fields included.
type codec struct{}

// Marshal returns the frame's bytes.
func (codec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("proxy codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.payload)}, nil
}

// Unmarshal keeps a copy of the bytes (gRPC reuses its buffers).
func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("proxy codec: cannot unmarshal into %T", v)
	}
	f.payload = data.Materialize()
	return nil
}

// Name is "proto": the content-subtype both ends already use.
func (codec) Name() string { return "proto" }
