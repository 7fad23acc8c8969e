package render

import (
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// ProtoJSON renders a CRI message as JSON with api.proto field names (as
// crictl's -o json does); nil for a nil message. Unlike protojson, env
// values (KeyValue.value, proto bytes since cri-api v0.37) are their text,
// not base64; see envValuesAsText.
func ProtoJSON(m proto.Message) json.RawMessage {
	if m == nil {
		return nil
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil
	}
	return envValuesAsText(b)
}

// ProtoYAML renders a CRI message as YAML lines (no trailing newline),
// made from ProtoJSON as crictl's -o yaml does: "{}" for a nil message.
func ProtoYAML(m proto.Message) []string {
	j := ProtoJSON(m)
	if j == nil {
		return []string{"{}"}
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return []string{string(j)}
	}
	return strings.Split(strings.TrimRight(string(y), "\n"), "\n")
}
