package watch

import (
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI services, and the CSI node service (a driver's socket taken
// over: proxy --csi), by their full protobuf names.
var services = []protoreflect.FullName{
	protoreflect.FullName(runtimeapi.RuntimeService_ServiceDesc.ServiceName),
	protoreflect.FullName(runtimeapi.ImageService_ServiceDesc.ServiceName),
	protoreflect.FullName(csipb.Node_ServiceDesc.ServiceName),
}

// messages are the request and response types of one method.
type messages struct{ req, resp protoreflect.MessageType }

// methodTypes maps a full gRPC method ("/runtime.v1.RuntimeService/X") to
// its message types, from the descriptors cri-api registers. Built on first
// use: walking the services makes protobuf unpack cri-api's whole file
// descriptor (~340 KB), which a package-level map paid on every command.
var methodTypes = sync.OnceValue(func() map[string]messages {
	m := map[string]messages{}
	for _, name := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			continue
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			continue
		}
		for i := 0; i < sd.Methods().Len(); i++ {
			md := sd.Methods().Get(i)
			in, err1 := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			out, err2 := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
			if err1 != nil || err2 != nil {
				continue
			}
			m["/"+string(name)+"/"+string(md.Name())] = messages{in, out}
		}
	}
	return m
})

// Known says whether podstep's cri-api names the method.
func Known(method string) bool {
	_, ok := methodTypes()[method]
	return ok
}

// decode unmarshals a method's request or response; nil when the method is
// unknown or the bytes do not parse (the proxy forwarded them anyway).
func decode(method string, b []byte, response bool) proto.Message {
	t, ok := methodTypes()[method]
	if !ok {
		return nil
	}
	mt := t.req
	if response {
		mt = t.resp
	}
	m := mt.New().Interface()
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, m); err != nil {
		return nil
	}
	return m
}
