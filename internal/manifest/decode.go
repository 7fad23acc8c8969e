package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/podstep/podstep/internal/workload"
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
	nodeAt int    // document of the Node, 0 until seen
	seen   map[string]int
	opts   Options
	cands  []candidate // the Pods and workloads, one of which becomes the Pod
}

// errf returns an *Error about the current document.
func (p *parser) errf(field, format string, args ...any) *Error {
	return &Error{File: p.file, Doc: p.doc, Kind: p.kind, Name: p.name, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// errList is the field errors of the document's object as one Error: the
// first by field path in Field and Msg, the others in Also (sorted by
// path, duplicates dropped). path maps each field path (nil: as is).
func (p *parser) errList(list []fieldErr, path func(string) string) *Error {
	if len(list) == 0 {
		return nil
	}
	if path != nil {
		for i := range list {
			list[i].field = path(list[i].field)
		}
	}
	slices.SortStableFunc(list, func(a, b fieldErr) int { return compareFieldPaths(a.field, b.field) })
	list = slices.CompactFunc(list, func(a, b fieldErr) bool { return a == b })
	e := p.errf(list[0].field, "%s", list[0].msg)
	for _, f := range list[1:] {
		e.Also = append(e.Also, FieldError{Field: f.field, Msg: f.msg})
	}
	return e
}

// compareFieldPaths orders field paths as a reader expects: element by
// element, list indexes as numbers (containers[2] before containers[10]).
func compareFieldPaths(a, b string) int {
	for a != "" && b != "" {
		ia, ib := strings.IndexByte(a, '['), strings.IndexByte(b, '[')
		if ia < 0 || ib < 0 || a[:ia] != b[:ib] {
			break
		}
		ja, jb := strings.IndexByte(a[ia:], ']'), strings.IndexByte(b[ib:], ']')
		if ja < 0 || jb < 0 {
			break
		}
		na, ea := strconv.Atoi(a[ia+1 : ia+ja])
		nb, eb := strconv.Atoi(b[ib+1 : ib+jb])
		if ea != nil || eb != nil {
			if c := strings.Compare(a[:ia+ja+1], b[:ib+jb+1]); c != 0 {
				return c
			}
		} else if na != nb {
			return cmp.Compare(na, nb)
		}
		a, b = a[ia+ja+1:], b[ib+jb+1:]
	}
	return strings.Compare(a, b)
}

var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

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
	return p.choose()
}

// yamlMessage rewrites a YAML error so that line numbers count from the
// start of the file rather than from the start of the document.
func yamlMessage(err error, firstLine int) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = shortText(strings.Join(strings.Fields(msg), " "))
	return yamlLineRE().ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(s, "line "))
		return "line " + strconv.Itoa(n+firstLine-1)
	})
}

// supportedKinds is the message fragment listing the supported kinds.
const supportedKinds = `"Pod", a workload ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob"), "Secret", "ConfigMap", "Node", "PersistentVolumeClaim", "PersistentVolume", "CSIDriver" or "VolumeAttachment"`

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
	switch {
	case kind == KindList && apiVersion == "v1":
		return p.list(js)
	case kind == KindPod || workload.IsWorkload(kind):
		p.kind = kind
		return p.candidate(kind, apiVersion, h.APIVersion, raw, js)
	}
	switch kind {
	case KindSecret, KindConfigMap, KindNode, KindPersistentVolumeClaim, KindPersistentVolume:
		p.kind = kind
	case KindCSIDriver, KindVolumeAttachment:
		p.kind = kind
		switch {
		case h.APIVersion == nil:
			return p.errf("apiVersion", "required value; expected %q", csiDriverAPIVersion)
		case apiVersion != csiDriverAPIVersion:
			return p.errf("apiVersion", "unsupported value %s; expected %q", jsonText(h.APIVersion), csiDriverAPIVersion)
		}
		if kind == KindVolumeAttachment {
			return p.volumeAttachment(js)
		}
		return p.csiDriver(js)
	default:
		p.skip(kind, apiVersion)
		return nil
	}
	switch {
	case h.APIVersion == nil:
		return p.errf("apiVersion", `required value; expected "v1"`)
	case apiVersion != "v1":
		return p.errf("apiVersion", `unsupported value %s; expected "v1"`, jsonText(h.APIVersion))
	}

	switch kind {
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
	case KindPersistentVolumeClaim:
		return p.claim(js)
	case KindPersistentVolume:
		return p.persistentVolume(js)
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
	if errs := checkQuantities(js, reflect.TypeOf(obj), ""); len(errs) > 0 {
		return p.errList(errs, func(f string) string { return strings.TrimPrefix(f, ".") })
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
	// Every unknown or duplicate field at once, as the API server's
	// strict field validation reports them.
	var list []fieldErr
	for _, serr := range strict {
		var fe sigsjson.FieldError
		path := ""
		if errors.As(serr, &fe) {
			path = fe.FieldPath()
		}
		switch {
		case strings.HasPrefix(serr.Error(), "unknown field"):
			list = append(list, fieldErr{field: path, msg: p.unknownFieldMessage(reflect.TypeOf(obj), path)})
		case strings.HasPrefix(serr.Error(), "duplicate field"):
			list = append(list, fieldErr{field: path, msg: "duplicate field; expected each key to appear only once in a mapping"})
		default:
			list = append(list, fieldErr{msg: serr.Error()})
		}
	}
	return p.errList(list, nil)
}
