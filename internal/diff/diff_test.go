package diff

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/record"
)

// recordings holds this package's fixtures: the workshop recordings as
// they were made on containerd 1.6 (testdata/recordings is re-recorded as
// podstep changes; these tests edit these files' exact lines) and the
// simulated hello of format v1.
const recordings = "testdata/"

func readFile(t testing.TB, path string) *Recording {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Read(filepath.Base(path), f)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return r
}

// TestCompareGolden compares real recordings (containerd 1.6 and the
// simulated runtime) and checks the text and JSON output.
func TestCompareGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    string
		differs bool
		same    bool // the manifests
	}{
		{"hello-itself", "hello.rec.gz", "hello.rec.gz", false, true},
		{"hello-sim-vs-containerd", "hello.v1.rec", "hello.rec.gz", true, true},
		{"init-vs-crashloop", "init.rec.gz", "crashloop.rec.gz", true, false},
		{"poststart-fails-vs-sidecar", "poststart-fails.rec.gz", "sidecar-startup-probe.rec.gz", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(readFile(t, recordings+tc.a), readFile(t, recordings+tc.b))
			if res.Differs() != tc.differs {
				t.Errorf("Differs() = %v, want %v (counts %+v)", res.Differs(), tc.differs, res.Counts)
			}
			if res.Manifest.Same != tc.same {
				t.Errorf("Manifest.Same = %v (%s), want %v", res.Manifest.Same, res.Manifest.Why, tc.same)
			}
			var txt, js bytes.Buffer
			if err := res.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			if err := res.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/"+tc.name+".txt", txt.String())
			golden.Check(t, "testdata/"+tc.name+".json", js.String())
		})
	}
}

// mutate returns the hello recording (containerd 1.6) with edits applied
// to its text, as a second recording.
func mutate(t *testing.T, edit func(string) string) *Recording {
	t.Helper()
	f, err := os.Open(recordings + "hello.rec.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Read("mutated", strings.NewReader(edit(string(raw))))
	if err != nil {
		t.Fatalf("read the mutated recording: %v", err)
	}
	return r
}

// dropLines removes the lines matching re.
func dropLines(s string, re string, max int) string {
	rx := regexp.MustCompile(re)
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if max > 0 && rx.MatchString(l) {
			max--
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// TestNormalisation edits a real recording the way a second run of the
// same pod differs (other IDs, UID, directories, times) or the way a
// different run does, and checks what the comparison reports.
func TestNormalisation(t *testing.T) {
	const (
		sandbox   = "ae8bad952fdbd13ec8c6689f5b23253d0a7d823314a9fd8c7352a6e7cfffef23"
		container = "87b59b8e4322bf7818791e3278648b4e135527f78db84a691e1db459e280489a"
		uid       = "5b6bceaa9a897516fcce3f603299b75c"
		dirs      = "/tmp/podstep-record-examples.FVzBuy/hello/"
		seen      = "2026-11-23T15:02:59.774409291Z"
		term      = "/containers/hello/1678c7c5"
	)
	rerun := strings.NewReplacer(
		sandbox, strings.Repeat("1f", 32),
		container, strings.Repeat("2e", 32),
		uid, "0123456789abcdef0123456789abcdef",
		dirs+"root", "/var/lib/kubelet",
		dirs+"logs", "/var/log/pods",
		seen, "2027-01-02T03:04:05.6Z",
		term, "/containers/hello/0badcafe",
	).Replace
	type want struct {
		op     Op
		method string
		paths  []string
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		want []want // the entries that are not Same
	}{
		{"unchanged", func(s string) string { return s }, nil},
		{"another run: ids, uid, dirs, times", rerun, nil},
		{"polling count", func(s string) string {
			return dropLines(rerun(s), `"type":"call","step":11,"method":"ListContainers"`, 4)
		}, nil},
		{"podstep bookkeeping dropped", func(s string) string {
			return strings.ReplaceAll(rerun(s), `"podstep.dev/managed":"true"`, `"podstep.dev/managed":"yes"`)
		}, nil},
		{"command differs", func(s string) string {
			return strings.ReplaceAll(rerun(s), "echo hello from podstep; sleep 3600", "echo bye; sleep 3600")
		}, []want{{Differ, "CreateContainer", []string{"config.command[2]"}}}},
		{"image digest differs", func(s string) string {
			return strings.ReplaceAll(rerun(s), `"image":"sha256:5095492a837d9aafe422977d7d21d98bd413f4d5c00948c5eac57f18d90edd87"`, `"image":"sha256:`+strings.Repeat("ab", 32)+`"`)
		}, []want{{Differ, "CreateContainer", []string{"config.image.image"}}}},
		{"a mount more", func(s string) string {
			return strings.ReplaceAll(rerun(s), `"mounts":[`, `"mounts":[{"container_path":"/data","host_path":"/srv"},`)
		}, []want{{Differ, "CreateContainer", []string{`config.mounts["/data"].container_path`, `config.mounts["/data"].host_path`}}}},
		{"code differs", func(s string) string {
			return strings.Replace(rerun(s), `"code":"Unimplemented"`, `"code":"OK"`, 1)
		}, []want{{Differ, "RuntimeConfig", nil}}},
		{"a call missing", func(s string) string {
			return dropLines(rerun(s), `"type":"call","step":7,"method":"PodSandboxStatus"`, 1)
		}, []want{{OnlyA, "PodSandboxStatus", nil}}},
		{"a call more", func(s string) string {
			extra := `{"type":"call","step":6,"method":"ListPodSandbox","request":{},"code":"OK","started":"2026-11-23T15:02:59.9Z","duration_ms":1}` + "\n"
			return strings.Replace(rerun(s), `{"type":"step","id":6,`, extra+`{"type":"step","id":6,`, 1)
		}, []want{{OnlyB, "ListPodSandbox", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(readFile(t, recordings+"hello.rec.gz"), mutate(t, tc.edit))
			var got []want
			for _, e := range res.Calls {
				if e.Op == Same {
					continue
				}
				w := want{op: e.Op, method: e.Method}
				for _, f := range e.Fields {
					w.paths = append(w.paths, f.Path)
				}
				got = append(got, w)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("entries that differ: %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].op != tc.want[i].op || got[i].method != tc.want[i].method || strings.Join(got[i].paths, ",") != strings.Join(tc.want[i].paths, ",") {
					t.Errorf("entry %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if res.Differs() != (len(tc.want) > 0) {
				t.Errorf("Differs() = %v with %d entries differing", res.Differs(), len(tc.want))
			}
		})
	}
}

func TestAlign(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want string // per pair: = for both, - for A only, + for B only
	}{
		{"", "", ""},
		{"abc", "abc", "==="},
		{"abc", "", "---"},
		{"", "ab", "++"},
		{"abcd", "acd", "=-=="},
		{"acd", "abcd", "=+=="},
		{"abc", "xbz", "-+=-+"},
		{"aab", "ab", "=-="},
	} {
		var got strings.Builder
		for _, p := range align(strings.Split(tc.a, ""), strings.Split(tc.b, "")) {
			switch {
			case p.a >= 0 && p.b >= 0:
				got.WriteByte('=')
			case p.a >= 0:
				got.WriteByte('-')
			default:
				got.WriteByte('+')
			}
		}
		if got.String() != tc.want {
			t.Errorf("align(%q, %q) = %s, want %s", tc.a, tc.b, got.String(), tc.want)
		}
	}
}

// TestReadBad: what is not a whole recording is refused with the reader's
// errors, named by the file.
func TestReadBad(t *testing.T) {
	raw, err := os.ReadFile(recordings + "hello.v1.rec")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		input string
		check func(error) bool
	}{
		{"empty", "", func(err error) bool { var e *record.NotRecordingError; return errors.As(err, &e) }},
		{"a manifest", "apiVersion: v1\nkind: Pod\n", func(err error) bool { var e *record.NotRecordingError; return errors.As(err, &e) }},
		{"cut", string(raw[:len(raw)*2/3]), func(err error) bool { var e *record.DamageError; return errors.As(err, &e) }},
		{"no summary", dropLines(string(raw), `"type":"summary"`, 1), func(err error) bool { var e *record.DamageError; return errors.As(err, &e) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("x.rec", strings.NewReader(tc.input))
			if err == nil || !tc.check(err) || !strings.HasPrefix(err.Error(), "x.rec: ") {
				t.Errorf("Read = %v, want the reader's error, prefixed with the name", err)
			}
		})
	}
}

// TestFields: requests are flattened by their CRI message type: enum
// names, bytes as text, map keys sorted, set empty messages kept.
func TestFields(t *testing.T) {
	got := Fields("CreateContainer", []byte(`{"config":{"metadata":{"name":"a"},"envs":[{"key":"K","value":"val"},{"key":"P","value":"443"},{"key":"R","value":"/w==","value_encoding":"base64"}],"labels":{"b":"2","a":"1"},"linux":{"security_context":{"namespace_options":{"pid":"CONTAINER"},"run_as_user":{}}}}}`))
	var b strings.Builder
	for _, f := range got {
		b.WriteString(f.Path + " = " + f.Value + "\n")
	}
	want := `config.metadata.name = "a"
config.envs["K"].key = "K"
config.envs["K"].value = "val"
config.envs["P"].key = "P"
config.envs["P"].value = "443"
config.envs["R"].key = "R"
config.envs["R"].value = "base64:/w=="
config.labels["a"] = "1"
config.labels["b"] = "2"
config.linux.security_context.namespace_options.pid = CONTAINER
config.linux.security_context.run_as_user = {}
`
	if b.String() != want {
		t.Errorf("Fields:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := Fields("NoSuchMethod", []byte(`{"x":{"y":[1,"z"]}}`)); len(got) != 2 || got[0].Path != "x.y[0]" || got[1].Value != `"z"` {
		t.Errorf("Fields of an unknown method = %+v, want the JSON flattened", got)
	}
}

const traces = "../../testdata/kubelet-traces/"

func readTrace(t *testing.T, name string) *Recording {
	t.Helper()
	data, err := os.ReadFile(traces + name)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTrace(data) {
		t.Fatalf("%s is not recognised as a kubelet trace", name)
	}
	r, err := ReadTrace(name, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadTrace reads the reference traces of a real kubelet v1.37: the
// calls in order with their containers and stages (the periodic Version
// and Status after RunPodSandbox left out), and requests rebuilt well
// enough to decode as their CRI messages.
func TestReadTrace(t *testing.T) {
	for _, tc := range []struct {
		file  string
		order string // the creation calls, until the first call of teardown
	}{
		{"simple.calls.txt", "Version Version RunPodSandbox PodSandboxStatus ImageStatus/main ImageStatus/main CreateContainer/main StartContainer/main " +
			"ListPodSandbox ListContainers PodSandboxStatus ContainerStatus/main ContainerStatus/main"},
		{"init.calls.txt", "Version Version RunPodSandbox PodSandboxStatus ImageStatus/setup ImageStatus/setup CreateContainer/setup StartContainer/setup " +
			"ListPodSandbox ListContainers PodSandboxStatus ContainerStatus/setup PodSandboxStatus ContainerStatus/setup " +
			"ImageStatus/main ImageStatus/main CreateContainer/main StartContainer/main ListPodSandbox ListContainers PodSandboxStatus ContainerStatus/main " +
			"ContainerStatus/setup ContainerStatus/main ContainerStatus/main"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := readTrace(t, tc.file)
			if !r.Partial || r.Header.Runtime.Name != "containerd" {
				t.Errorf("Partial %v, runtime %q: want a partial recording of containerd", r.Partial, r.Header.Runtime.Name)
			}
			var order []string
			for _, c := range r.Calls {
				if c.Stage == "teardown" {
					break
				}
				k := c.Method
				if c.Container != "" {
					k += "/" + c.Container
				}
				order = append(order, k)
			}
			if got := strings.Join(order, " "); got != tc.order {
				t.Errorf("creation calls:\n got %s\nwant %s", got, tc.order)
			}
			for _, c := range r.Calls {
				if c.Method != "CreateContainer" {
					continue
				}
				got := map[string]string{}
				for _, f := range Fields(c.Method, c.Request) {
					got[f.Path] = f.Value
				}
				if got["config.metadata.name"] != `"`+c.Container+`"` || got["config.log_path"] != `"`+c.Container+`/0.log"` ||
					got[`config.mounts["/etc/hosts"].container_path`] == "" || got["sandbox_config.metadata.uid"] == "" ||
					got["config.linux.security_context.seccomp.profile_type"] != "Unconfined" {
					t.Errorf("CreateContainer %s: fields %v", c.Container, got)
				}
			}
		})
	}
	if IsTrace([]byte(`{"type":"header"}`)) || IsTrace([]byte("# a comment\n")) {
		t.Error("IsTrace takes what is not a trace")
	}
}

// TestCompareWithKubeletTrace compares a podstep recording of the simple
// pod (containerd 1.6 on the test harness, busybox:latest tagged from the
// harness's busybox:1.35, so the image digest differs from the trace's)
// with the real kubelet's trace of the same manifest.
func TestCompareWithKubeletTrace(t *testing.T) {
	res := Compare(readFile(t, "testdata/simple.rec.gz"), readTrace(t, "simple.calls.txt"))
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/simple-vs-kubelet.txt", txt.String())
	// With the static pod's name normalised, podstep's requests are the
	// kubelet's: the sandbox config is the same, and the container config
	// differs in the image digest only.
	paired := map[string]int{}
	for _, e := range res.Calls {
		if e.Op == OnlyA || e.Op == OnlyB {
			continue
		}
		paired[e.Method]++
		switch e.Method {
		case "RunPodSandbox", "StartContainer", "PodSandboxStatus":
			if e.Op != Same {
				t.Errorf("%s: %s %+v, want the same", e.Method, e.Op, e.Fields)
			}
		case "CreateContainer":
			if e.Op != Differ || len(e.Fields) != 1 || e.Fields[0].Path != "config.image.image" {
				t.Errorf("CreateContainer: %s %+v, want config.image.image only", e.Op, e.Fields)
			}
		}
	}
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemovePodSandbox"} {
		if paired[m] != 1 {
			t.Errorf("%s aligned %d times, want once", m, paired[m])
		}
	}
}

// TestStaticPodName: the names are normalised only when one is the other
// as the kubelet names a static pod, NAME-NODE, with the node of that
// recording's header when it has one.
func TestStaticPodName(t *testing.T) {
	rec := func(name, node string) *Recording {
		r := &Recording{Calls: []*Call{{Method: "RunPodSandbox", Request: []byte(`{"config":{"metadata":{"name":"` + name + `"}}}`)}}}
		if node != "" {
			r.Header.Node = &record.Node{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}}
		}
		return r
	}
	for _, tc := range []struct {
		a, b, nodeB string
		want        bool
	}{
		{"hello", "hello-vm", "vm", true},
		{"hello", "hello-vm", "", true},
		{"hello", "hello-other", "vm", false},
		{"hello", "hello", "", false},
		{"hello", "bye-vm", "", false},
		{"hello", "hello-", "", false},
	} {
		if got := StaticPodName(rec(tc.a, ""), rec(tc.b, tc.nodeB)); got != tc.want {
			t.Errorf("StaticPodName(%q, %q on node %q) = %v, want %v", tc.a, tc.b, tc.nodeB, got, tc.want)
		}
		if got := StaticPodName(rec(tc.b, tc.nodeB), rec(tc.a, "")); got != tc.want {
			t.Errorf("StaticPodName(%q on node %q, %q) = %v, want %v", tc.b, tc.nodeB, tc.a, got, tc.want)
		}
	}
}

// TestCheckManifests: the pod specs are compared only when both headers
// hold the manifest the run loaded; a recording without one (podstep
// proxy's holds the pod as the kubelet's calls show it, without a
// "filename" flag) and a trace cannot be checked, and say so.
func TestCheckManifests(t *testing.T) {
	hello := readFile(t, recordings+"hello.rec.gz")
	proxyLike := mutate(t, func(s string) string {
		return strings.Replace(s, `"filename":"testdata/pods/hello.yaml",`, "", 1)
	})
	for _, tc := range []struct {
		name string
		a, b *Recording
		same bool
		why  string
	}{
		{"same", hello, readFile(t, recordings+"hello.v1.rec"), true, ""},
		{"different", hello, readFile(t, recordings+"crashloop.rec.gz"), false, "the pod specs differ: spec.containers[0].command[2], "},
		{"a kubelet's recording", hello, proxyLike, false, "mutated holds no manifest"},
		{"a trace", readTrace(t, "simple.calls.txt"), hello, false, "simple.calls.txt holds no manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckManifests(tc.a, tc.b)
			if got.Same != tc.same || !strings.HasPrefix(got.Why, tc.why) {
				t.Errorf("CheckManifests = %+v, want same %v, why %q…", got, tc.same, tc.why)
			}
		})
	}
}

// TestTraceLineTooLong: a trace line over MaxTraceLine is an error that
// names the line, not bufio's "token too long".
func TestTraceLineTooLong(t *testing.T) {
	data := "# simple: CREATE phase (t0 = x)\n# t0 (relative times) = epoch 1795272218.123883\n" +
		"+ 1.0ms [1.0ms] RunPodSandbox x=" + strings.Repeat("a", MaxTraceLine+1) + "\n"
	_, err := ReadTrace("big.calls.txt", strings.NewReader(data))
	if err == nil || !strings.Contains(err.Error(), "big.calls.txt: line 3: longer than 4 MiB") {
		t.Errorf("got %v, want the line named", err)
	}
}

// TestAttributeByID: a call that names a container ID is that container's,
// whatever its step says (a proxy's teardown step of "app" holds the
// sidecar's StopContainer too), so the alignment pairs the same
// containers' calls.
func TestAttributeByID(t *testing.T) {
	create := func(name, id string) *Call {
		return &Call{Method: "CreateContainer", Container: name,
			Request:  json.RawMessage(`{"config":{"metadata":{"name":"` + name + `"}}}`),
			Response: json.RawMessage(`{"container_id":"` + id + `"}`)}
	}
	calls := []*Call{create("app", "id-app"), create("proxy", "id-proxy")}
	n := newNormaliser(calls)
	for _, tc := range []struct{ step, id, want string }{
		{"app", "id-proxy", "proxy"},
		{"", "id-app", "app"},
		{"app", "id-unknown", "app"},
	} {
		c := &Call{Method: "StopContainer", Container: tc.step, Request: json.RawMessage(`{"container_id":"` + tc.id + `"}`)}
		n.attribute(c)
		if c.Container != tc.want {
			t.Errorf("StopContainer of %s in a step of %q: container %q, want %q", tc.id, tc.step, c.Container, tc.want)
		}
	}
}
