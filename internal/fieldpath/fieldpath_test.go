package fieldpath

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testMeta() *metav1.ObjectMeta {
	return &metav1.ObjectMeta{
		Name: "web", Namespace: "shop", UID: "1234-abcd",
		Labels:      map[string]string{"tier": "debug", "app": "demo"},
		Annotations: map[string]string{"podstep.dev/about": `quotes " and` + "\nnewline", "b": "2"},
	}
}

// TestExtractFieldPathAsString: the paths a downwardAPI volume item (and,
// after the kubelet's own fields, an env var) resolves, and the errors.
func TestExtractFieldPathAsString(t *testing.T) {
	tests := []struct{ path, want, err string }{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "shop"},
		{path: "metadata.uid", want: "1234-abcd"},
		{path: "metadata.labels", want: "app=\"demo\"\ntier=\"debug\""},
		{path: "metadata.annotations", want: "b=\"2\"\npodstep.dev/about=\"quotes \\\" and\\nnewline\""},
		{path: "metadata.labels['tier']", want: "debug"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['podstep.dev/about']", want: "quotes \" and\nnewline"},
		{path: "metadata.annotations['B']", want: ""},
		{path: "metadata.labels['bad key!']", err: "invalid key subscript in metadata.labels['bad key!']: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{path: "metadata.name['x']", err: `fieldPath "metadata.name['x']" does not support subscript`},
		{path: "spec.nodeName", err: "unsupported fieldPath: spec.nodeName"},
		{path: "['x']", err: "unsupported fieldPath: ['x']"},
	}
	for _, tc := range tests {
		got, err := ExtractFieldPathAsString(testMeta(), tc.path)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: error %v, want %q", tc.path, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s = %q (%v), want %q", tc.path, got, err, tc.want)
		}
	}
}

func TestSplitMaybeSubscriptedPath(t *testing.T) {
	tests := []struct {
		in, path, key string
		ok            bool
	}{
		{"metadata.labels['app']", "metadata.labels", "app", true},
		{"metadata.annotations['a['b']", "metadata.annotations", "a['b", true},
		{"metadata.labels", "metadata.labels", "", false},
		{"['app']", "['app']", "", false},
		{"metadata.labels'app']", "metadata.labels'app']", "", false},
		{"metadata.labels['']", "metadata.labels", "", true},
	}
	for _, tc := range tests {
		path, key, ok := SplitMaybeSubscriptedPath(tc.in)
		if path != tc.path || key != tc.key || ok != tc.ok {
			t.Errorf("SplitMaybeSubscriptedPath(%q) = %q, %q, %v; want %q, %q, %v", tc.in, path, key, ok, tc.path, tc.key, tc.ok)
		}
	}
}

func TestFormatMap(t *testing.T) {
	tests := []struct {
		in   map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"b": "2", "a": `x"y`}, "a=\"x\\\"y\"\nb=\"2\""},
		{map[string]string{"k": "line\nbreak\ttab é"}, `k="line\nbreak\ttab é"`},
	}
	for _, tc := range tests {
		if got := FormatMap(tc.in); got != tc.want {
			t.Errorf("FormatMap(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConvertDownwardAPIFieldLabel(t *testing.T) {
	tests := []struct{ version, label, want, err string }{
		{"v1", "metadata.name", "metadata.name", ""},
		{"v1", "status.podIPs", "status.podIPs", ""},
		{"v1", "spec.host", "spec.nodeName", ""},
		{"v1", "metadata.labels['a']", "metadata.labels['a']", ""},
		{"v1", "spec.nodeName['a']", "", "field label does not support subscript: spec.nodeName['a']"},
		{"v1", "spec.bogus", "", "field label not supported: spec.bogus"},
		{"v2", "metadata.name", "", "unsupported pod version: v2"},
	}
	for _, tc := range tests {
		got, err := ConvertDownwardAPIFieldLabel(tc.version, tc.label)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s %s: error %v, want %q", tc.version, tc.label, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s %s = %q (%v), want %q", tc.version, tc.label, got, err, tc.want)
		}
	}
}
