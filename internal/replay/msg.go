package replay

import (
	"encoding/json"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	// The CRI messages, registered for lazy decoding by name.
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	// The CSI node service's messages and methods (the volumes stage's
	// calls), registered likewise.
	_ "github.com/podstep/podstep/internal/csi"
)

// lazyMsg is a recorded CRI message (protobuf JSON) decoded only when it
// is first looked at: a recording of a thousand steps opens without
// decoding its thousands of calls, and only the shown step's are decoded.
type lazyMsg struct {
	name protoreflect.FullName
	raw  json.RawMessage
	once sync.Once
	m    proto.Message
}

// newMsg is the message of CRI method's request ("Request") or response
// ("Response") recorded as raw; nil when nothing was recorded.
func newMsg(method, suffix string, raw json.RawMessage) proto.Message {
	if len(raw) == 0 {
		return nil
	}
	return &lazyMsg{name: protoreflect.FullName(cri.ProtoPackage(method) + "." + method + suffix), raw: raw}
}

// ProtoReflect decodes the message on first use. A message of an unknown
// type or that does not decode is shown as an empty message.
func (l *lazyMsg) ProtoReflect() protoreflect.Message {
	l.once.Do(func() {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(l.name)
		if err == nil {
			m := mt.New().Interface()
			if protojson.Unmarshal(l.raw, m) == nil {
				l.m = m
				return
			}
		}
		l.m = &emptypb.Empty{}
	})
	return l.m.ProtoReflect()
}
