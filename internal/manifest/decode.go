package manifest

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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// rawDoc is one YAML document of the file.
type rawDoc struct {
	data []byte
	line int // 1-based line of the file where the document starts
}

// splitDocuments splits a multi-document YAML file on "---" lines (a "---"
// alone on its line, optionally followed by a comment).
func splitDocuments(data []byte) []rawDoc {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	var (
		docs  []rawDoc
		cur   bytes.Buffer
		start = 1
	)
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		if isSeparator(l) {
			docs = append(docs, rawDoc{data: bytes.Clone(cur.Bytes()), line: start})
			cur.Reset()
			start = i + 2
			continue
		}
		cur.Write(l)
	}
	docs = append(docs, rawDoc{data: bytes.Clone(cur.Bytes()), line: start})
	return docs
}

func isSeparator(line []byte) bool {
	l := bytes.TrimRight(line, " \t\r\n")
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := l[3:]
	if len(rest) == 0 {
		return true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), []byte("#"))
}

// parser holds the state of one Parse call.
type parser struct {
	file   string
	bundle *Bundle
	doc    int    // number of the current document (non-empty ones only)
	kind   string // kind of the current document
	name   string // name of the current document
	podDoc int    // document of the Pod, 0 until seen
	nodeAt int    // document of the Node, 0 until seen
	seen   map[string]int
}

// errf returns an *Error about the current document.
func (p *parser) errf(field, format string, args ...any) *Error {
	return &Error{File: p.file, Doc: p.doc, Kind: p.kind, Name: p.name, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// header is the part of a document read before it is decoded strictly.
type header struct {
	APIVersion any `json:"apiVersion"`
	Kind       any `json:"kind"`
	Metadata   any `json:"metadata"`
}

func (p *parser) parse(data []byte) error {
	p.seen = map[string]int{}
	expanded := 0
	for _, d := range splitDocuments(data) {
		if len(bytes.Trim(d.data, " \r\n")) == 0 {
			continue // empty document: skip the YAML decoder
		}
		p.kind, p.name = "", ""
		p.doc++ // this part's number, if it holds a document
		var e *Error
		if expanded, e = p.checkYAML(d, expanded); e != nil {
			return e
		}
		js, err := yaml.YAMLToJSONStrict(d.data)
		if err != nil {
			msg := yamlMessage(err, d.line)
			if strings.Contains(msg, "already set in map") {
				return p.errf("", "invalid YAML: %s; expected each key at most once per mapping", msg)
			}
			return p.errf("", "invalid YAML: %s; expected well-formed YAML (indent with spaces, not tabs)", msg)
		}
		js = bytes.TrimSpace(js)
		if bytes.Equal(js, []byte("null")) {
			p.doc-- // empty document: not counted
			continue
		}
		if err := p.document(d.data, js); err != nil {
			return err
		}
	}
	p.doc, p.kind, p.name = 0, "", ""
	if p.bundle.Pod == nil {
		return p.errf("", "no Pod found; expected exactly one document with apiVersion: v1 and kind: Pod")
	}
	return nil
}

// yamlMessage rewrites a YAML error so that line numbers count from the
// start of the file rather than from the start of the document.
func yamlMessage(err error, firstLine int) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = shortText(strings.Join(strings.Fields(msg), " "))
	return yamlLineRE.ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(s, "line "))
		return "line " + strconv.Itoa(n+firstLine-1)
	})
}

// supportedKinds is the message fragment listing the supported kinds.
const supportedKinds = `"Pod", "Secret", "ConfigMap" or "Node"`

func (p *parser) document(raw, js []byte) error {
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return p.errf("", "document is %s; expected a mapping with apiVersion, kind, metadata, ...", describeJSON(js))
	}
	kind, _ := h.Kind.(string)
	apiVersion, _ := h.APIVersion.(string)
	if md, ok := h.Metadata.(map[string]any); ok {
		if n, ok := md["name"].(string); ok {
			p.name = n
		}
	}
	switch {
	case h.Kind == nil:
		return p.errf("kind", "required value; expected one of %s", supportedKinds)
	case kind == "":
		return p.errf("kind", "invalid value %s; expected one of %s", jsonText(h.Kind), supportedKinds)
	}
	switch kind {
	case KindPod, KindSecret, KindConfigMap, KindNode:
		p.kind = kind
	default:
		return p.errf("kind", "unsupported kind %q; expected one of %s (podstep replays a single Pod, not controllers such as Deployments)", kind, supportedKinds)
	}
	switch {
	case h.APIVersion == nil:
		return p.errf("apiVersion", `required value; expected "v1"`)
	case apiVersion != "v1":
		return p.errf("apiVersion", `unsupported value %s; expected "v1"`, jsonText(h.APIVersion))
	}

	switch kind {
	case KindPod:
		if p.podDoc != 0 {
			return p.errf("", "a second Pod (the first is document %d); expected exactly one Pod per manifest", p.podDoc)
		}
		pod := &corev1.Pod{}
		if err := p.decode(js, pod); err != nil {
			return err
		}
		p.podDoc = p.doc
		setPodDefaults(pod, raw)
		if e := validatePod(pod); e != nil {
			return p.errf(e.field, "%s", e.msg)
		}
		p.bundle.Pod = pod
	case KindSecret:
		s := &corev1.Secret{}
		if err := p.decode(js, s); err != nil {
			return err
		}
		setSecretDefaults(s)
		if e := validateSecret(s); e != nil {
			return p.errf(e.field, "%s", e.msg)
		}
		key := s.Namespace + "/" + s.Name
		if err := p.checkDuplicate(kind, key); err != nil {
			return err
		}
		p.bundle.Secrets[key] = s
	case KindConfigMap:
		c := &corev1.ConfigMap{}
		if err := p.decode(js, c); err != nil {
			return err
		}
		setConfigMapDefaults(c)
		if e := validateConfigMap(c); e != nil {
			return p.errf(e.field, "%s", e.msg)
		}
		key := c.Namespace + "/" + c.Name
		if err := p.checkDuplicate(kind, key); err != nil {
			return err
		}
		p.bundle.ConfigMaps[key] = c
	case KindNode:
		if p.nodeAt != 0 {
			return p.errf("", "a second Node (the first is document %d); expected at most one Node per manifest", p.nodeAt)
		}
		n := &corev1.Node{}
		if err := p.decode(js, n); err != nil {
			return err
		}
		setNodeDefaults(n)
		if e := validateNode(n); e != nil {
			return p.errf(e.field, "%s", e.msg)
		}
		p.nodeAt = p.doc
		p.bundle.Node = n
	}
	return nil
}

func (p *parser) checkDuplicate(kind, key string) error {
	k := kind + " " + key
	if d, ok := p.seen[k]; ok {
		return p.errf("metadata.name", "duplicate %s %q (also in document %d); expected each %s to appear once", kind, key, d, kind)
	}
	p.seen[k] = p.doc
	return nil
}

// decode strictly decodes the JSON document js into obj, after checking its
// quantities (see checkQuantities).
func (p *parser) decode(js []byte, obj any) error {
	if field, msg := checkQuantities(js, reflect.TypeOf(obj), ""); msg != "" {
		return p.errf(strings.TrimPrefix(field, "."), "%s", msg)
	}
	strict, err := sigsjson.UnmarshalStrict(js, obj)
	if err != nil {
		field, leaf, leafRaw, leafErr := locate(js, reflect.TypeOf(obj))
		field = strings.TrimPrefix(field, ".")
		if leafErr == nil {
			leafErr, leaf, leafRaw = err, nil, nil
		}
		return p.errf(field, "%s", decodeMessage(leaf, leafRaw, leafErr))
	}
	if len(strict) == 0 {
		return nil
	}
	serr := strict[0]
	var fe sigsjson.FieldError
	path := ""
	if errors.As(serr, &fe) {
		path = fe.FieldPath()
	}
	switch {
	case strings.HasPrefix(serr.Error(), "unknown field"):
		return p.errf(path, "%s", p.unknownFieldMessage(reflect.TypeOf(obj), path))
	case strings.HasPrefix(serr.Error(), "duplicate field"):
		return p.errf(path, "duplicate field; expected each key to appear only once in a mapping")
	default:
		return p.errf("", "%v", serr)
	}
}

var indexRE = regexp.MustCompile(`\[[^\]]*\]`)

// unknownFieldMessage explains an unknown field at path and suggests the
// closest known field name.
func (p *parser) unknownFieldMessage(root reflect.Type, path string) string {
	segs := strings.Split(indexRE.ReplaceAllString(path, ""), ".")
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

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	timeType        = reflect.TypeFor[metav1.Time]()
	microTimeType   = reflect.TypeFor[metav1.MicroTime]()
)

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFields maps the JSON names of the fields of struct type t (inlined
// embedded structs included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
			if et := derefType(f.Type); et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
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
				msg += fmt.Sprintf(" (quote the value to make it a string: \"%s\")", shortText(string(raw)))
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
