package diff

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The CRI messages, registered by name for decoding recorded requests.
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Field is one leaf of a request: its path (api.proto field names, list
// indexes, map keys) and its value as text.
type Field struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Fields flattens the recorded request of a CRI method. It decodes it as
// the method's request message (runtime.v1.<Method>Request) and walks it by
// protobuf reflection, so field names, enum names and bytes are read as the
// CRI defines them; a request of a method cri-api does not know (a newer
// kubelet's, passed through by the proxy) is flattened as plain JSON.
func Fields(method string, raw json.RawMessage) []Field {
	if len(raw) == 0 {
		return nil
	}
	var out []Field
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("runtime.v1." + method + "Request"))
	if err == nil {
		m := mt.New().Interface()
		if protojson.Unmarshal(envValuesAsBase64(raw), m) == nil {
			walkMessage("", m.ProtoReflect(), &out)
			return out
		}
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return []Field{{Path: "(request)", Value: string(raw)}}
	}
	walkJSON("", v, &out)
	return out
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// walkMessage appends the set fields of m, in field-number order. A set
// message field with nothing in it is a leaf "{}" (presence can matter:
// an empty seccomp profile is not an absent one).
func walkMessage(prefix string, m protoreflect.Message, out *[]Field) {
	fds := m.Descriptor().Fields()
	n := len(*out)
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if !m.Has(fd) {
			continue
		}
		path := join(prefix, string(fd.Name()))
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				walkValue(path+"["+listKey(fd, l.Get(j), j)+"]", fd, l.Get(j), out)
			}
		case fd.IsMap():
			mp := v.Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(a, b int) bool { return keys[a].String() < keys[b].String() })
			for _, k := range keys {
				walkValue(path+"["+strconv.Quote(k.String())+"]", fd.MapValue(), mp.Get(k), out)
			}
		default:
			walkValue(path, fd, v, out)
		}
	}
	if len(*out) == n && prefix != "" {
		*out = append(*out, Field{Path: prefix, Value: "{}"})
	}
}

func walkValue(path string, fd protoreflect.FieldDescriptor, v protoreflect.Value, out *[]Field) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		walkMessage(path, v.Message(), out)
	case protoreflect.EnumKind:
		name := fmt.Sprint(v.Enum())
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			name = string(ev.Name())
		}
		*out = append(*out, Field{Path: path, Value: name})
	case protoreflect.BytesKind:
		b := v.Bytes()
		s := string(b)
		if !utf8.Valid(b) {
			s = "base64:" + base64.StdEncoding.EncodeToString(b)
		}
		*out = append(*out, Field{Path: path, Value: strconv.Quote(s)})
	case protoreflect.StringKind:
		*out = append(*out, Field{Path: path, Value: strconv.Quote(v.String())})
	default:
		*out = append(*out, Field{Path: path, Value: v.String()})
	}
}

// walkJSON flattens plain JSON the same way.
func walkJSON(path string, v any, out *[]Field) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 && path != "" {
			*out = append(*out, Field{Path: path, Value: "{}"})
		}
		for _, k := range keys {
			walkJSON(join(path, k), x[k], out)
		}
	case []any:
		for i, e := range x {
			walkJSON(path+"["+strconv.Itoa(i)+"]", e, out)
		}
	case string:
		*out = append(*out, Field{Path: path, Value: strconv.Quote(x)})
	default:
		b, _ := json.Marshal(x)
		*out = append(*out, Field{Path: path, Value: strings.TrimSpace(string(b))})
	}
}

// listKeys are the fields that name an element of a repeated message
// field, so that an element inserted in one request shows as one
// difference, not as every later element moved: a mount by its
// container_path, an env var (KeyValue) by its key, a device by its
// container_path.
var listKeys = []protoreflect.Name{"container_path", "key"}

// listKey is the index of element v of list field fd: its key field's
// value quoted, or its position.
func listKey(fd protoreflect.FieldDescriptor, v protoreflect.Value, i int) string {
	if fd.Kind() == protoreflect.MessageKind {
		m := v.Message()
		for _, name := range listKeys {
			if kf := m.Descriptor().Fields().ByName(name); kf != nil && kf.Kind() == protoreflect.StringKind && m.Has(kf) {
				return strconv.Quote(m.Get(kf).String())
			}
		}
	}
	return strconv.Itoa(i)
}

// envValuesAsBase64 undoes what recordings do to env values for people to
// read (render's envValuesAsText): ContainerConfig.envs[].value is proto
// bytes, which protojson reads as base64 only, so each text value is
// encoded back (one kept as base64, "value_encoding": "base64", is left as
// it is). Without it a request with env vars would not decode as its CRI
// message and would be compared as plain JSON, unlike the same request
// without env vars. raw is returned as it is when it holds no "envs".
func envValuesAsBase64(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"envs"`)) {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, y := range x {
				if envs, ok := y.([]any); ok && k == "envs" {
					for _, e := range envs {
						kv, ok := e.(map[string]any)
						if !ok {
							continue
						}
						if s, ok := kv["value"].(string); ok && kv["value_encoding"] != "base64" {
							kv["value"] = base64.StdEncoding.EncodeToString([]byte(s))
						}
						delete(kv, "value_encoding")
					}
					continue
				}
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
