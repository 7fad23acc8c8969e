package cri

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The secrets of the tests: a long one, a short one (below
// MinSubstringLen), and one with a trailing newline and two lines.
const (
	long   = "Sup3r-Secret-Pw-8841"
	short  = "4719"
	pemish = "line-one-ABCDEF\nline-two-GHIJKL\n"
	// subPin is a short value expanded into a subPathExpr.
	subPin = "q!7"
)

func testRedactor() *Redactor {
	r := &Redactor{}
	r.AddSecretEnv("API_TOKEN")
	r.AddSecrets(long, short, pemish, "")
	// What podcfg reports for $(DB_PASSWORD), $(PIN) in command, args, env
	// and subPathExpr.
	r.AddExpansion("postgres://u:"+long+"@db", "postgres://u:"+Mask+"@db")
	r.AddExpansion("--pin="+short, "--pin="+Mask)
	r.AddExpansion(short, Mask)
	r.AddExpansion(long, Mask)
	r.AddSubPath("ab/"+subPin, "ab/"+Mask)
	r.AddSubPath(subPin, Mask)
	return r
}

func container(mut func(*runtimeapi.ContainerConfig)) *runtimeapi.CreateContainerRequest {
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: "app"},
		Image:       &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:      map[string]string{"io.kubernetes.container.name": "app"},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"},
		LogPath:     "app/0.log",
	}
	mut(cfg)
	return &runtimeapi.CreateContainerRequest{PodSandboxId: "sb", Config: cfg}
}

func TestRedactMessages(t *testing.T) {
	kv := func(k, v string) *runtimeapi.KeyValue { return &runtimeapi.KeyValue{Key: k, Value: []byte(v)} }
	for _, tc := range []struct {
		name string
		in   proto.Message
		want proto.Message
	}{{
		name: "env named as Secret-sourced: whole value",
		in:   container(func(c *runtimeapi.ContainerConfig) { c.Envs = []*runtimeapi.KeyValue{kv("API_TOKEN", "tok")} }),
		want: container(func(c *runtimeapi.ContainerConfig) { c.Envs = []*runtimeapi.KeyValue{kv("API_TOKEN", Mask)} }),
	}, {
		name: "env whose value is a Secret value, long and short",
		in:   container(func(c *runtimeapi.ContainerConfig) { c.Envs = []*runtimeapi.KeyValue{kv("PW", long), kv("PIN", short)} }),
		want: container(func(c *runtimeapi.ContainerConfig) { c.Envs = []*runtimeapi.KeyValue{kv("PW", Mask), kv("PIN", Mask)} }),
	}, {
		name: "another env's value built with $(VAR)",
		in: container(func(c *runtimeapi.ContainerConfig) {
			c.Envs = []*runtimeapi.KeyValue{kv("DSN", "postgres://u:"+long+"@db"), kv("FLAG", "--pin="+short)}
		}),
		want: container(func(c *runtimeapi.ContainerConfig) {
			c.Envs = []*runtimeapi.KeyValue{kv("DSN", "postgres://u:"+Mask+"@db"), kv("FLAG", "--pin="+Mask)}
		}),
	}, {
		name: "command and args",
		in: container(func(c *runtimeapi.ContainerConfig) {
			c.Command = []string{"sh", "-c", "exec app --password " + long}
			c.Args = []string{short, "--pin=" + short, "1"}
		}),
		want: container(func(c *runtimeapi.ContainerConfig) {
			c.Command = []string{"sh", "-c", "exec app --password " + Mask}
			c.Args = []string{Mask, "--pin=" + Mask, "1"}
		}),
	}, {
		name: "mount host paths from subPathExpr",
		in: container(func(c *runtimeapi.ContainerConfig) {
			c.Mounts = []*runtimeapi.Mount{
				{ContainerPath: "/a", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/" + short},
				{ContainerPath: "/b", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/" + long + "/x"},
				{ContainerPath: "/c", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/x" + short},
			}
		}),
		want: container(func(c *runtimeapi.ContainerConfig) {
			c.Mounts = []*runtimeapi.Mount{
				{ContainerPath: "/a", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/" + Mask},
				{ContainerPath: "/b", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/" + Mask + "/x"},
				{ContainerPath: "/c", HostPath: "/pods/uid/volumes/kubernetes.io~empty-dir/data/x" + short},
			}
		}),
	}, {
		name: "short value only in placed fields; long value in labels and annotations",
		in: container(func(c *runtimeapi.ContainerConfig) {
			c.Metadata.Name = short
			c.Labels["pin"] = short
			c.Annotations["note"] = "pw=" + long
			c.WorkingDir = "/work/" + short
		}),
		want: container(func(c *runtimeapi.ContainerConfig) {
			c.Metadata.Name = short
			c.Labels["pin"] = short
			c.Annotations["note"] = "pw=" + Mask
			c.WorkingDir = "/work/" + short
		}),
	}, {
		name: "exec output (bytes) and command",
		in:   &runtimeapi.ExecSyncResponse{Stdout: []byte("hook sees " + long + "\n"), Stderr: []byte(short)},
		want: &runtimeapi.ExecSyncResponse{Stdout: []byte("hook sees " + Mask + "\n"), Stderr: []byte(short)},
	}, {
		name: "multi-line value, line by line, and its base64",
		in:   &runtimeapi.ExecSyncResponse{Stdout: []byte("> line-two-GHIJKL\n" + base64.StdEncoding.EncodeToString([]byte(long)))},
		want: &runtimeapi.ExecSyncResponse{Stdout: []byte("> " + Mask + "\n" + Mask)},
	}, {
		name: "map values other than labels and annotations",
		in:   &runtimeapi.StatusResponse{Info: map[string]string{"config": `{"env":"PW=` + long + `"}`}},
		want: &runtimeapi.StatusResponse{Info: map[string]string{"config": `{"env":"PW=` + Mask + `"}`}},
	}, {
		name: "registry credentials",
		in:   &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "reg/x"}, Auth: &runtimeapi.AuthConfig{Username: "bob", Password: "pw", Auth: "Ym9iOnB3"}},
		want: &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "reg/x"}, Auth: &runtimeapi.AuthConfig{Username: "bob", Password: Mask, Auth: Mask}},
	}, {
		name: "status of a container: mounts and message",
		in: &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Message: "password " + long + " rejected",
			Mounts: []*runtimeapi.Mount{{HostPath: "/v/" + short}}}, Info: map[string]string{"info": `{"env":["PIN=4719"]}`}},
		want: &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Message: "password " + Mask + " rejected",
			Mounts: []*runtimeapi.Mount{{HostPath: "/v/" + Mask}}}, Info: map[string]string{"info": Mask}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRedactor()
			orig := proto.Clone(tc.in)
			got := r.Redact(tc.in)
			if !proto.Equal(got, tc.want) {
				t.Errorf("Redact:\n got %v\nwant %v", got, tc.want)
			}
			if !proto.Equal(tc.in, orig) {
				t.Errorf("Redact changed its input")
			}
			// What the JSON output prints: no long secret in clear or base64
			// (bytes fields are printed in base64).
			js := protojson.Format(got)
			for _, s := range []string{long, base64.StdEncoding.EncodeToString([]byte(long))} {
				if strings.Contains(js, s) {
					t.Errorf("protobuf JSON shows %q: %s", s, js)
				}
			}
		})
	}
}

func TestRedactText(t *testing.T) {
	r := testRedactor()
	for _, tc := range []struct{ in, want string }{
		{"container said: " + long, "container said: " + Mask},
		{"token " + base64.StdEncoding.EncodeToString([]byte(long)) + " seen", "token " + Mask + " seen"},
		{"raw base64 " + base64.RawStdEncoding.EncodeToString([]byte(long)), "raw base64 " + Mask},
		{`message: "line-one-ABCDEF\nline-two-GHIJKL\n"`, `message: "` + Mask + `"`},
		{"first line-one-ABCDEF", "first " + Mask},
		{"dsn postgres://u:" + long + "@db failed", "dsn postgres://u:" + Mask + "@db failed"},
		// An expansion holding a short value is long enough to be found.
		{"unknown flag --pin=" + short, "unknown flag --pin=" + Mask},
		// A short value alone in free text is not masked: "exit code 1",
		// "port 4719" would lose their meaning.
		{"exit code 1, port " + short, "exit code 1, port " + short},
		// A short subPath expansion is, as a path component or quoted.
		{`volumeMount 1 (data, subPath "q!7"): opened /v/data/q!7 without following symlinks`,
			`volumeMount 1 (data, subPath "` + Mask + `"): opened /v/data/` + Mask + ` without following symlinks`},
		{"error SubPath `q!7` must not be an absolute path", "error SubPath `" + Mask + "` must not be an absolute path"},
		{"opened /v/data/ab/q!7/x, /v/data/q!7", "opened /v/data/ab/" + Mask + "/x, /v/data/" + Mask},
		{"/v/data/q!7x and q!7 alone", "/v/data/q!7x and q!7 alone"},
		{"", ""},
	} {
		if got := r.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactError(t *testing.T) {
	r := testRedactor()
	err := status.Error(codes.Unknown, `failed to create containerd task: exec: "`+long+`": executable file not found`)
	got := r.Error(err)
	if status.Code(got) != codes.Unknown || strings.Contains(got.Error(), long) || !strings.Contains(got.Error(), Mask) {
		t.Errorf("Error(%v) = %v, want code Unknown and the value masked", err, got)
	}
	plain := status.Error(codes.NotFound, "no such container")
	if r.Error(plain) != plain {
		t.Errorf("an error without secret was replaced")
	}
}

// TestRedactNothingKnown: a redactor without secrets leaves text and
// messages alone (and the zero Redactor, as a client makes it, works).
func TestRedactNothingKnown(t *testing.T) {
	var r Redactor
	in := container(func(c *runtimeapi.ContainerConfig) { c.Args = []string{long} })
	if got := r.Redact(in); !proto.Equal(got, in) {
		t.Errorf("Redact without secrets changed %v to %v", in, got)
	}
	if got := r.Text(long); got != long {
		t.Errorf("Text without secrets = %q", got)
	}
}

// TestRedactResponse: an answer with nothing to mask is recorded as it is
// (no copy: a relist of a 1,000-container pod copied each answer, issue
// 34); one that holds a secret anywhere, at any depth, is a masked copy and
// the answer the engine reads is left whole.
func TestRedactResponse(t *testing.T) {
	r := testRedactor()
	ctr := func(ann string) *runtimeapi.ListContainersResponse {
		return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
			{Id: "a", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Annotations: map[string]string{"k": "v"}},
			{Id: "b", Metadata: &runtimeapi.ContainerMetadata{Name: "b"}, Image: &runtimeapi.ImageSpec{Annotations: map[string]string{"x": ann}}},
		}}
	}
	for _, tc := range []struct {
		name   string
		in     proto.Message
		shared bool
	}{
		{"nothing to mask", ctr("plain"), true},
		{"a secret in a nested map", ctr("pw=" + long), false},
		{"a short secret alone in a free-text field", &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Message: "x"}}, true},
		{"a secret in a status message", &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Message: "failed: " + long}}, false},
		{"verbose info with secrets known", &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{}, Info: map[string]string{"info": "{}"}}, false},
		{"a secret in a list of strings", &runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{{RepoTags: []string{"r/" + long}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.in)
			got := r.Response(tc.in)
			if shared := got == tc.in; shared != tc.shared {
				t.Fatalf("answer shared = %v, want %v", shared, tc.shared)
			}
			if !proto.Equal(tc.in, before) {
				t.Errorf("the answer itself was changed: %v", tc.in)
			}
			if !tc.shared && !proto.Equal(got, r.Redact(tc.in)) {
				t.Errorf("Response = %v, want what Redact gives: %v", got, r.Redact(tc.in))
			}
			if b, _ := protojson.Marshal(got); strings.Contains(string(b), long) {
				t.Errorf("recorded answer holds the secret: %s", b)
			}
		})
	}
	var none Redactor
	in := ctr("pw=" + long)
	if none.Response(in) != in {
		t.Errorf("without secrets, an answer must not be copied")
	}
}
