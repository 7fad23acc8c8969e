package manifest

// This file turns what the decoder reports into the messages podstep
// shows: the field that failed, what was there and what was expected, and
// for an unknown field the closest known name ("did you mean").

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	sigsjson "sigs.k8s.io/json"
)

var indexRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[[^\]]*\]`) })

// unknownFieldMessage explains an unknown field at path and suggests the
// closest known field name.
func (p *parser) unknownFieldMessage(root reflect.Type, path string) string {
	segs := strings.Split(indexRE().ReplaceAllString(path, ""), ".")
	name := segs[len(segs)-1]
	parent := segs[:len(segs)-1]
	t := root
	for _, s := range parent {
		t = derefType(t)
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = derefType(t.Elem())
		}
		if t.Kind() != reflect.Struct {
			t = nil
			break
		}
		ft, ok := jsonFields(t)[s]
		if !ok {
			t = nil
			break
		}
		t = ft
	}
	explain := strings.Join(append([]string{strings.ToLower(p.kind)}, parent...), ".")
	msg := fmt.Sprintf("unknown field %q", shortText(name))
	if t != nil {
		t = derefType(t)
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = derefType(t.Elem())
		}
		if t.Kind() == reflect.Struct {
			if s := closest(name, slices.Sorted(maps.Keys(jsonFields(t)))); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
		}
	}
	return msg + fmt.Sprintf("; expected a field of %s: check spelling and indentation (`kubectl explain %s` lists the fields)", explain, explain)
}

// closest returns the candidate nearest to name, if it is close enough to be
// a likely typo.
func closest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		// A known name with more after it: "emptyDirectory" is emptyDir.
		for _, c := range candidates {
			if len(c) >= 4 && len(c) > len(best) && strings.HasPrefix(strings.ToLower(name), strings.ToLower(c)) {
				best = c
			}
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// locate finds where decoding raw into a value of type t fails: it returns
// the field path (relative to raw, starting with "." or "["), the type and raw JSON of the innermost
// value that fails, and its error. It returns a nil error when raw decodes.
func locate(raw []byte, t reflect.Type) (string, reflect.Type, []byte, error) {
	bt := derefType(t)
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(bt).Interface())
	if err == nil {
		return "", nil, nil, nil
	}
	if reflect.PointerTo(bt).Implements(unmarshalerType) {
		return "", bt, raw, err
	}
	switch bt.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			break
		}
		fields := jsonFields(bt)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				continue
			}
			if p, lt, lr, le := locate(m[k], ft); le != nil {
				return "." + k + p, lt, lr, le
			}
		}
	case reflect.Slice:
		if bt.Elem().Kind() == reflect.Uint8 {
			break
		}
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil {
			break
		}
		for i, e := range a {
			if p, lt, lr, le := locate(e, bt.Elem()); le != nil {
				return "[" + strconv.Itoa(i) + "]" + p, lt, lr, le
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if p, lt, lr, le := locate(m[k], bt.Elem()); le != nil {
				return "[" + k + "]" + p, lt, lr, le
			}
		}
	}
	return "", bt, raw, err
}

// decodeMessage explains why raw could not be decoded into a value of type t.
func decodeMessage(t reflect.Type, raw []byte, err error) string {
	if t == nil {
		return err.Error()
	}
	got := describeJSON(raw)
	switch t {
	case quantityType:
		return fmt.Sprintf("invalid quantity %s; expected a number with an optional suffix, such as \"100m\", \"0.5\", \"64Mi\" or \"1G\"", got)
	case intOrStringType:
		return fmt.Sprintf("wrong type: got %s; expected an integer or a string, such as 8080 or \"http\"", got)
	case timeType, microTimeType:
		return fmt.Sprintf("invalid time %s; expected an RFC 3339 time such as \"2024-01-02T15:04:05Z\"", got)
	}
	var cie base64.CorruptInputError
	if errors.As(err, &cie) {
		return fmt.Sprintf("invalid base64 data (%v); expected base64-encoded data (put plain text in stringData instead)", err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		msg := fmt.Sprintf("wrong type: got %s; expected %s", got, describeType(t))
		if t.Kind() == reflect.String && len(raw) > 0 {
			switch raw[0] {
			case 't', 'f':
				msg += " (quote the value to make it a string: unquoted yes/no, on/off, y/n and true/false are booleans in YAML)"
			case '{', '[', 'n', '"':
			default:
				msg += fmt.Sprintf(" (quote the value to make it a string: %q)", shortText(string(raw)))
			}
		}
		return msg
	}
	return fmt.Sprintf("invalid value %s: %v", got, err)
}

// describeJSON describes a JSON value for a message, such as `string "80"`.
func describeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > maxArgLen {
		raw = []byte(shorten(string(raw), shortLen))
	}
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	case '"':
		return "string " + string(raw)
	case 't', 'f':
		return "boolean " + string(raw)
	case 'n':
		return "null"
	default:
		return "number " + string(raw)
	}
}

// jsonText returns v as compact JSON text, such as "v2" (with quotes) or 2.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return shortText(fmt.Sprint(v))
	}
	return shortText(string(b))
}

// describeType describes what a value of Go type t looks like in YAML.
func describeType(t reflect.Type) string {
	t = derefType(t)
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return fmt.Sprintf("an integer (%d-bit)", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "base64-encoded data"
		}
		return "a list"
	case reflect.Map:
		return "a mapping"
	case reflect.Struct:
		return "a mapping of fields"
	}
	return t.String()
}
