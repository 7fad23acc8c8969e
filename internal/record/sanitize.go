package record

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
)

// ManifestOf is the bundle as a header records it. Each Secret keeps its
// name, namespace, labels, type and keys, with every value empty (and no
// annotations: kubectl's last-applied-configuration would repeat the
// values). In everything else (the pod, ConfigMaps, the Node), every
// string is masked as the engine masks what it shows: Secret values and
// their forms inside any text, and, in env values, commands and args, a
// string that is a Secret value whole, whatever its length. The file's
// digest is left out: a hash of the file could confirm a guessed short value.
func ManifestOf(b *manifest.Bundle, red *cri.Redactor) Manifest {
	m := Manifest{File: b.File}
	whole := secretValues(b)
	m.Pod = masked(b.Pod, red, whole)
	for _, key := range sortedKeys(b.Secrets) {
		s := b.Secrets[key]
		out := &corev1.Secret{TypeMeta: s.TypeMeta, Type: s.Type, ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, UID: s.UID, Labels: s.Labels}}
		for k := range s.Data {
			if out.Data == nil {
				out.Data = map[string][]byte{}
			}
			out.Data[k] = []byte{}
		}
		for k := range s.StringData {
			if out.StringData == nil {
				out.StringData = map[string]string{}
			}
			out.StringData[k] = ""
		}
		if out = masked(out, red, whole); out != nil {
			m.Secrets = append(m.Secrets, out)
		}
	}
	for _, key := range sortedKeys(b.ConfigMaps) {
		if c := masked(b.ConfigMaps[key], red, whole); c != nil {
			m.ConfigMaps = append(m.ConfigMaps, c)
		}
	}
	m.Node = masked(b.Node, red, whole)
	return m
}

// NodeOf is the admission node as a header records it, masked as ManifestOf
// masks the bundle b.
func NodeOf(n *node.Node, b *manifest.Bundle, red *cri.Redactor) *Node {
	if n == nil {
		return nil
	}
	whole := secretValues(b)
	out := &Node{Source: n.Source, AllowedUnsafeSysctls: n.AllowedUnsafeSysctls, Object: masked(n.Object, red, whole)}
	for _, p := range n.Existing {
		if c := masked(p, red, whole); c != nil {
			out.Existing = append(out.Existing, c)
		}
	}
	return out
}

// secretValues are the bundle's Secret values (data and stringData) and
// their trimmed and base64 forms.
func secretValues(b *manifest.Bundle) map[string]bool {
	out := map[string]bool{}
	add := func(v string) {
		for _, f := range []string{v, strings.TrimSpace(v)} {
			if f != "" {
				out[f] = true
				out[base64.StdEncoding.EncodeToString([]byte(f))] = true
			}
		}
	}
	for _, s := range b.Secrets {
		for _, v := range s.Data {
			add(string(v))
		}
		for _, v := range s.StringData {
			add(v)
		}
	}
	return out
}

// wholeFields are the JSON keys whose string values (or list items) are
// masked when they are a Secret value whole: where a pod spec can hold a
// value literally (env values, command and args), as the redactor masks
// whole CRI fields.
var wholeFields = map[string]bool{"value": true, "command": true, "args": true}

// masked returns a copy of v with every string masked (nil for nil, and
// nil, not a half-masked copy, when the masked form does not decode).
func masked[T any](v *T, red *cri.Redactor, whole map[string]bool) *T {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil
	}
	if raw, err = json.Marshal(maskTree(tree, false, red, whole)); err != nil {
		return nil
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil
	}
	return out
}

func maskTree(v any, inWhole bool, red *cri.Redactor, whole map[string]bool) any {
	switch t := v.(type) {
	case string:
		if inWhole && whole[t] {
			return cri.Mask
		}
		return red.Text(t)
	case []any:
		for i := range t {
			t[i] = maskTree(t[i], inWhole, red, whole)
		}
	case map[string]any:
		for k := range t {
			t[k] = maskTree(t[k], wholeFields[k], red, whole)
		}
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
