package render

import (
	"bytes"
	"encoding/json"
	"google.golang.org/protobuf/proto"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		w    int
		want []string
	}{
		{"fits", "the kubelet pulls", 20, []string{"the kubelet pulls"}},
		{"at spaces", "the kubelet pulls the image", 12, []string{"the kubelet", "pulls the", "image"}},
		{"exact width", "abcd efgh", 4, []string{"abcd", "efgh"}},
		{"runs of spaces are one", "  a \t b  ", 10, []string{"a b"}},
		{"paragraphs", "one two\n\nthree", 7, []string{"one two", "", "three"}},
		{"empty", "", 10, []string{""}},
		{"hyphens stay whole", "a back-off of post-start", 10, []string{"a back-off", "of", "post-start"}},
		{"long words are cut", "x /var/lib/podstep/pods y", 8, []string{"x", "/var/lib", "/podstep", "/pods y"}},
		{"wide characters", "世界 世界 ab", 5, []string{"世界", "世界", "ab"}},
		{"width below 1", "a b", 0, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.s, tc.w)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Wrap(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.want)
			}
		})
	}
}

func TestProtoYAML(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  *runtimeapi.PodSandboxMetadata
		want string
	}{
		{"nil", nil, "{}"},
		{"empty", &runtimeapi.PodSandboxMetadata{}, "{}"},
		{"api.proto names", &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Attempt: 2}, "attempt: 2\nname: web\nuid: u1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if tc.msg == nil {
				got = ProtoYAML(nil)
			} else {
				got = ProtoYAML(tc.msg)
			}
			if s := strings.Join(got, "\n"); s != tc.want {
				t.Errorf("ProtoYAML = %q, want %q", s, tc.want)
			}
		})
	}
	if j := string(ProtoJSON(&runtimeapi.ContainerMetadata{Name: "app"})); !strings.Contains(j, `"name"`) {
		t.Errorf("ProtoJSON = %s", j)
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{400 * time.Microsecond, "0.4ms"},
		{9940 * time.Microsecond, "9.9ms"},
		{12 * time.Millisecond, "12ms"},
		{1200 * time.Millisecond, "1.20s"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestProtoJSONEnvValuesAsText(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"config", &runtimeapi.ContainerConfig{Envs: []*runtimeapi.KeyValue{
			{Key: "GREETING", Value: []byte(`hello "world" <b> ünïcode`)},
			{Key: "EMPTY"},
		}}, `{"envs":[{"key":"GREETING","value":"hello \"world\" <b> ünïcode"},{"key":"EMPTY"}]}`},
		{"request", &runtimeapi.CreateContainerRequest{PodSandboxId: "s1", Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Envs:     []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}},
		}}, `{"pod_sandbox_id":"s1","config":{"metadata":{"name":"app"},"envs":[{"key":"A","value":"1"}]}}`},
		{"not UTF-8 stays base64, marked", &runtimeapi.ContainerConfig{Envs: []*runtimeapi.KeyValue{
			{Key: "BIN", Value: []byte{0xff, 0xfe}},
		}}, `{"envs":[{"key":"BIN","value":"//4=","value_encoding":"base64"}]}`},
		{"other value fields untouched", &runtimeapi.ContainerConfig{
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}}},
			Envs:  []*runtimeapi.KeyValue{{Key: "A", Value: []byte("x")}},
		}, `{"envs":[{"key":"A","value":"x"}],"linux":{"security_context":{"run_as_user":{"value":"1000"}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(ProtoJSON(tc.msg))
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(got)); err != nil {
				t.Fatalf("ProtoJSON is not JSON: %v: %s", err, got)
			}
			if compact.String() != tc.want {
				t.Errorf("ProtoJSON =\n %s\nwant\n %s", compact.String(), tc.want)
			}
		})
	}
	y := strings.Join(ProtoYAML(&runtimeapi.ContainerConfig{Envs: []*runtimeapi.KeyValue{{Key: "A", Value: []byte("plain text")}}}), "\n")
	if !strings.Contains(y, "value: plain text") {
		t.Errorf("ProtoYAML env value is not text:\n%s", y)
	}
}
