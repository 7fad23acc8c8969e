package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// seedFiles adds every manifest of the repository's testdata to f's corpus.
func seedFiles(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{"testdata/bad/*.yaml", "testdata/pods/*.yaml", "internal/scenario/data/*.yaml", "testdata/nodes/*.yaml"} {
		files, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, data)
		}
	}
	if len(seeds) < 60 {
		f.Fatalf("found %d seed manifests, want at least 60", len(seeds))
	}
	return seeds
}

// checkResult is the property every fuzz target checks: Parse does not
// panic (the fuzzer reports panics), and gives either a Bundle that obeys
// the rules podstep relies on, or exactly one *Error, short and on one line.
func checkResult(t *testing.T, b *Bundle, err error) {
	t.Helper()
	if err != nil {
		if b != nil {
			t.Fatalf("both a bundle and an error: %v", err)
		}
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("error %T (%v), want *manifest.Error", err, err)
		}
		msg := err.Error()
		// One line per field error: the first names the object (and the
		// error, when it is the only one); each other line is one of the
		// object's field errors, indented: a newline from the input never
		// starts a line of its own.
		lines := strings.Split(msg, "\n")
		switch {
		case me.Msg == "":
			t.Fatalf("empty message: %q", msg)
		case len(lines) != 1 && len(lines) != min(len(me.Also)+1, maxShown+1)+1:
			t.Fatalf("error of %d lines for %d field errors: %q", len(lines), len(me.Also)+1, msg)
		case strings.ContainsRune(msg, '\r'):
			t.Fatalf("error with a carriage return: %q", msg)
		case !utf8.ValidString(msg):
			t.Fatalf("error is not UTF-8: %q", msg)
		}
		for i, l := range lines {
			switch {
			case len(l) > maxErrorLen:
				t.Fatalf("error line of %d bytes, want at most %d: %.300q...", len(l), maxErrorLen, l)
			case i > 0 && (!strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ")):
				t.Fatalf("error line %d is not one field error: %q", i, msg)
			}
		}
		return
	}
	if b == nil || b.Pod == nil {
		t.Fatal("no error and no Pod")
	}
	checkBundle(t, b)
}

// checkBundle checks what podstep relies on in an accepted bundle.
func checkBundle(t *testing.T, b *Bundle) {
	t.Helper()
	p := b.Pod
	if !uidRE().MatchString(string(p.UID)) {
		t.Fatalf("accepted uid %q", p.UID)
	}
	for _, v := range p.Spec.Volumes {
		var paths []string
		add := func(items []corev1.KeyToPath) {
			for _, it := range items {
				paths = append(paths, it.Path)
			}
		}
		switch {
		case v.ConfigMap != nil:
			add(v.ConfigMap.Items)
		case v.Secret != nil:
			add(v.Secret.Items)
		case v.DownwardAPI != nil:
			for _, it := range v.DownwardAPI.Items {
				paths = append(paths, it.Path)
			}
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(s.ConfigMap.Items)
				}
				if s.Secret != nil {
					add(s.Secret.Items)
				}
				if s.DownwardAPI != nil {
					for _, it := range s.DownwardAPI.Items {
						paths = append(paths, it.Path)
					}
				}
				if s.ServiceAccountToken != nil {
					paths = append(paths, s.ServiceAccountToken.Path)
				}
			}
		case v.HostPath != nil:
			if hasBackstep(v.HostPath.Path) {
				t.Fatalf("accepted hostPath %q", v.HostPath.Path)
			}
		}
		for _, ip := range paths {
			if localPathProblem(ip, true) != "" || ip == "" {
				t.Fatalf("volume %q: accepted item path %q", v.Name, ip)
			}
		}
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if localPathProblem(m.SubPath, false) != "" || localPathProblem(m.SubPathExpr, false) != "" {
				t.Fatalf("container %q: accepted subPath %q, subPathExpr %q", c.Name, m.SubPath, m.SubPathExpr)
			}
		}
	}
	walkQuantities(reflect.ValueOf(b), "", func(name string, q resource.Quantity) {
		if msg := quantityValueProblem(corev1.ResourceName(name), q); msg != "" {
			t.Fatalf("accepted quantity %s (%s): %s", q.String(), name, msg)
		}
	})
}

// walkQuantities calls fn with every resource.Quantity reachable from v
// and the map key it is stored under ("" when none).
func walkQuantities(v reflect.Value, key string, fn func(string, resource.Quantity)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkQuantities(v.Elem(), key, fn)
		}
	case reflect.Struct:
		if v.Type() == quantityType {
			fn(key, v.Interface().(resource.Quantity))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkQuantities(v.Field(i), "", fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkQuantities(v.Index(i), "", fn)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := ""
			if it.Key().Kind() == reflect.String {
				k = it.Key().String()
			}
			walkQuantities(it.Value(), k, fn)
		}
	}
}

// FuzzLoad parses arbitrary bytes as a manifest.
func FuzzLoad(f *testing.F) {
	for _, s := range seedFiles(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxSize {
			data = data[:MaxSize]
		}
		b, err := Parse("fuzz.yaml", data)
		checkResult(t, b, err)
	})
}

// fieldTemplates are Pod documents with one value left open (%s, written
// as a YAML double-quoted string), where hostile values matter.
var fieldTemplates = []string{
	"metadata: {name: web, uid: %s}\nspec: {containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {volumes: [{name: c, configMap: {name: c, items: [{key: k, path: %s}]}}], containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {volumes: [{name: p, projected: {sources: [{secret: {name: s, items: [{key: k, path: a}]}}, {downwardAPI: {items: [{path: %s, fieldRef: {fieldPath: metadata.name}}]}}]}}], containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {volumes: [{name: h, hostPath: {path: %s}}], containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {volumes: [{name: d}], containers: [{name: web, image: busybox:1.35, volumeMounts: [{name: d, mountPath: /d, subPath: %s}]}]}",
	"metadata: {name: web}\nspec: {volumes: [{name: d}], containers: [{name: web, image: busybox:1.35, volumeMounts: [{name: d, mountPath: /d, subPathExpr: %s}]}]}",
	"metadata: {name: web}\nspec: {containers: [{name: web, image: busybox:1.35, resources: {limits: {memory: %s}}}]}",
	"metadata: {name: web}\nspec: {containers: [{name: web, image: busybox:1.35, resources: {requests: {cpu: %s}}}]}",
	"metadata: {name: web}\nspec: {overhead: {cpu: %s}, containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {containers: [{name: web, image: busybox:1.35, livenessProbe: {httpGet: {port: %s}}}]}",
	"metadata: {name: web}\nspec: {securityContext: {sysctls: [{name: %s, value: \"1\"}]}, containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web}\nspec: {hostname: %s, containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: %s}\nspec: {containers: [{name: web, image: busybox:1.35}]}",
	"metadata: {name: web, labels: {%s: x}}\nspec: {containers: [{name: web, image: busybox:1.35}]}",
}

// FuzzPodField puts an arbitrary string into one field of a valid Pod, to
// reach the validation rules with hostile values rather than hostile YAML.
func FuzzPodField(f *testing.F) {
	for i := range fieldTemplates {
		for _, v := range []string{"a", "../x", "/etc/passwd", "..data", "x/../../victim", "a\x00b", "1e1000", "9223372036854775808", "-1", "0", "http", "net.ipv4.ip_forward", strings.Repeat("a", 300), "$(POD_NAME)"} {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		tmpl := fieldTemplates[int(which)%len(fieldTemplates)]
		doc := "apiVersion: v1\nkind: Pod\n" + strings.Replace(tmpl, "%s", yamlQuote(value), 1) + "\n"
		b, err := Parse("fuzz.yaml", []byte(doc))
		checkResult(t, b, err)
	})
}

// yamlQuote writes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range []byte(s) {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(r)
		case r < 0x20 || r >= 0x7f:
			sb.WriteString(`\x`)
			sb.WriteString(strings.ToUpper(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15])))
		default:
			sb.WriteByte(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
