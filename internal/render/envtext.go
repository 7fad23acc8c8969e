package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// envValuesAsText rewrites protojson output so that every env value
// (ContainerConfig.envs[].value, a KeyValue whose value is proto bytes since
// cri-api v0.37) is its text rather than the base64 protojson gives bytes.
// A value that is not valid UTF-8 keeps its base64 and gains a sibling
// "value_encoding": "base64", so nothing is lost and nothing is ambiguous.
// Key order is kept; the result is compact JSON. JSON without "envs" is
// returned as it is, so messages without env pay one bytes.Contains.
func envValuesAsText(j []byte) []byte {
	if !bytes.Contains(j, []byte(`"envs"`)) {
		return j
	}
	out, err := rewriteEnvs(j)
	if err != nil {
		return j
	}
	return out
}

// frame is one open JSON object or array while rewriting.
type frame struct {
	object   bool   // an object (else an array)
	key      string // the object's current key, once read
	wantKey  bool   // the next token in this object is a key
	n        int    // members written so far, for commas
	envs     bool   // an array under the key "envs"
	keyValue bool   // an object inside an "envs" array
}

func rewriteEnvs(j []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var out bytes.Buffer
	var stack []*frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	// sep writes the comma before a value or key, as the enclosing frame needs.
	sep := func() {
		f := top()
		if f == nil {
			return
		}
		if f.object {
			if f.wantKey && f.n > 0 {
				out.WriteByte(',')
			}
			return
		}
		if f.n > 0 {
			out.WriteByte(',')
		}
	}
	// wrote records that a value was written in the enclosing frame.
	wrote := func() {
		f := top()
		if f == nil {
			return
		}
		f.n++
		if f.object {
			f.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		f := top()
		if f != nil && f.object && f.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				out.WriteByte('}')
				wrote()
				continue
			}
			k, _ := tok.(string)
			sep()
			writeJSON(&out, k)
			out.WriteByte(':')
			f.key, f.wantKey = k, false
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				sep()
				out.WriteByte(byte(t))
				nf := &frame{object: t == '{', wantKey: t == '{'}
				if f != nil {
					nf.envs = t == '[' && f.object && f.key == "envs"
					nf.keyValue = t == '{' && f.envs
				}
				stack = append(stack, nf)
			case ']':
				stack = stack[:len(stack)-1]
				out.WriteByte(']')
				wrote()
			}
		case string:
			sep()
			if f != nil && f.keyValue && f.key == "value" {
				writeEnvValue(&out, t)
			} else {
				writeJSON(&out, t)
			}
			wrote()
		default:
			sep()
			writeJSON(&out, t)
			wrote()
		}
	}
	return out.Bytes(), nil
}

// writeEnvValue writes a KeyValue value given as base64: its text when it
// is UTF-8, else the base64 with "value_encoding":"base64" after it.
func writeEnvValue(out *bytes.Buffer, b64 string) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err == nil && utf8.Valid(raw) {
		writeJSON(out, string(raw))
		return
	}
	writeJSON(out, b64)
	out.WriteString(`,"value_encoding":"base64"`)
}

// writeJSON writes v as JSON without HTML escaping.
func writeJSON(out *bytes.Buffer, v any) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	out.Truncate(out.Len() - 1) // Encode's newline
}
