package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/imageconfig"
)

// bin is the podstep binary built once for the tests that need a process
// (signals, stdin).
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	// No run of these tests reads an image config from a registry: their
	// outputs must not depend on one answering (the binary inherits it).
	os.Setenv(imageconfig.EnvMode, imageconfig.ModeOff)
	if os.Getenv("RMTREE_SWAPPER") != "" {
		os.Exit(m.Run()) // the other user's process of a race test: no binary to build
	}
	dir, err := os.MkdirTemp("", "podstep-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "podstep")
	// Built as released (CGO_ENABLED=0, hack/release.sh), whatever the test
	// run's own setting: under the race pass (CGO_ENABLED=1) a cgo binary's
	// libc thread arenas alone outgrow TestInputFilesBounded's 1 GiB
	// address-space limit.
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic(string(out))
	}
	simServeBinary = func() (string, error) { return bin, nil }
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run executes podstep in-process and returns its exit code and outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func dirs(t *testing.T) (root, logs string) {
	d := t.TempDir()
	return filepath.Join(d, "root"), filepath.Join(d, "logs")
}

// TestBadManifests: every manifest under testdata/bad gives its one-line
// error and exit 2, and nothing is sent: the runtime endpoint named does
// not exist, so contacting it would be exit 3.
func TestBadManifests(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/bad/*.yaml")
	if len(files) < 15 {
		t.Fatalf("only %d bad manifests", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			root, logs := dirs(t)
			code, out, errOut := run(t, "run", "--auto", "-f", f, "-r", "unix:///nonexistent/podstep-test.sock", "--root-dir", root, "--log-dir", logs)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2; stderr: %s", code, errOut)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimPrefix(strings.TrimSpace(errOut), "error: ")
			got = strings.TrimPrefix(got, "../../")
			if got != strings.TrimSpace(string(want)) {
				t.Errorf("stderr = %q\nwant    %q", got, strings.TrimSpace(string(want)))
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("root dir was created for bad input")
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{"run", "--auto"},
		{"run", "--auto", "-f", "../../testdata/pods/hello.yaml", "-o", "yaml"},
		{"run", "--auto", "-f", "../../testdata/pods/hello.yaml", "--break", "nosuchstage"},
		{"run", "--nosuchflag"},
		{"plan"},
		{"nosuchcommand"},
		{"run", "--auto", "-f", "../../testdata/pods/hello.yaml", "--feature-gates", "NoSuchGate=true"},
		{"run", "--auto", "-f", "../../testdata/pods/hello.yaml", "--feature-gates", "ProcMountType=false"},
		{"plan", "-f", "../../testdata/pods/hello.yaml", "--feature-gates", "ContainerStopSignals=maybe"},
		// plan checks what run checks (session.Options.Validate).
		{"plan", "-f", "../../testdata/pods/hello.yaml", "--cgroup-driver", "bogus"},
		{"plan", "-f", "../../testdata/pods/hello.yaml", "--settle", "-1s"},
		{"plan", "-f", "../../testdata/pods/hello.yaml", "-o", "text"},
	}
	for _, args := range cases {
		code, _, errOut := run(t, args...)
		if code != ExitUsage || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("%v: exit %d stderr %q, want exit 2 with an error line", args, code, errOut)
		}
	}
}

func TestUnreachableRuntime(t *testing.T) {
	root, logs := dirs(t)
	code, _, errOut := run(t, "run", "--auto", "-f", "../../testdata/pods/hello.yaml", "-r", "unix:///nonexistent/podstep.sock", "--root-dir", root, "--log-dir", logs)
	if code != ExitRuntime || !strings.Contains(errOut, "runtime unreachable") {
		t.Fatalf("exit %d stderr %q, want 3 and 'runtime unreachable'", code, errOut)
	}
}

// normalize masks what changes between runs: durations, IDs, times, paths.
func normalize(s, root, logs string) string {
	s = strings.ReplaceAll(s, root, "<root>")
	s = strings.ReplaceAll(s, logs, "<logs>")
	for _, r := range []struct{ re, with string }{
		{`unix:///[^ )"]*sim\.sock`, "<sim>"},
		{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`, "<time>"},
		{`\b[0-9a-f]{64}\b`, "<id>"},
		{`\b[0-9a-f]{13}\b`, "<id>"},
		{`sha256:[0-9a-f]{12}`, "sha256:<id>"},
		{`\d+(\.\d+)?(ms|s)\b`, "<dur>"},
		{`"(duration_ms|create_ms|cri_ms|wait_ms|overhead_ms|teardown_ms)":[0-9.e+-]+`, `"$1":0`},
		{`on node [a-z0-9.-]+`, "on node <node>"},
		{`containers/([a-z]+)/[0-9a-f]{8}`, "containers/$1/<hex>"},
		{`"node(Name)?":"[^"]*"`, `"node$1":"<node>"`},
		{`"hostIPs?":[^,]*,`, ``},
		{`host IP [0-9a-f.:]+`, "host IP <host-ip>"},
		{`("field":"status.hostIP","from":"[^"]*","to":)"[^"]*"`, `$1"<host-ip>"`},
		// How often a relist ran before it saw an exit, and when, depend on timing.
		{`relists: \d+`, "relists: <n>"},
		{`at \d\d:\d\d:\d\d\.\d+`, "at <clock>"},
		{`memory [0-9.]+[KMGT]i requested`, "memory <mem> requested"},
		{`allocatable [0-9.]+[a-zA-Z]*`, "allocatable <alloc>"},
		{`"(created_at|started_at|finished_at|timestamp)":"\d+"`, `"$1":"<ns>"`},
		{`"key":"node","value":"[^"]*"`, `"key":"node","value":"<node>"`},
		// The machine's huge page sizes (/sys/kernel/mm/hugepages) differ between machines.
		{`"hugepage_limits":\[[^\]]*\]`, `"hugepage_limits":"<machine's page sizes>"`},
		// How often the init wait and the relist poll depends on timing;
		// the relist's first calls (SyncPod's relist) do not.
		{`\[((?:ListPodSandbox, ListContainers, PodSandboxStatus, ContainerStatus(?: ×\d+)?, )?)ListContainers[^\]]*\]`, "[${1}<relists>]"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}

// checkGolden compares got with testdata/name (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// TestAutoGolden runs test pods against the simulated runtime through the
// real gRPC path, in text and JSON, and compares with golden output.
func TestAutoGolden(t *testing.T) {
	for _, pod := range []string{"hello", "init", "hooks"} {
		for _, format := range []string{"text", "json"} {
			t.Run(pod+"-"+format, func(t *testing.T) {
				// The init wait's JSON lists every relist call, whose count depends on timing.
				skipGolden := pod == "init" && format == "json"
				root, logs := dirs(t)
				code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "--grace-period", "0", "-o", format,
					"-f", "../../testdata/pods/"+pod+".yaml", "--root-dir", root, "--log-dir", logs)
				if code != 0 {
					t.Fatalf("exit %d: %s\n%s", code, errOut, out)
				}
				if format == "json" {
					checkJSON(t, out)
				}
				if !skipGolden {
					checkGolden(t, "auto-"+pod+"."+format, normalize(out, root, logs))
				}
				assertEmpty(t, filepath.Join(root, "pods"))
			})
		}
	}
}

// checkJSON checks every line is one JSON object with a type, and that the
// summary says running.
func checkJSON(t *testing.T, out string) {
	t.Helper()
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
		}
		if last["type"] == nil {
			t.Fatalf("line without type: %s", sc.Text())
		}
	}
	if last["type"] != "summary" || last["outcome"] != "running" || last["exit_code"].(float64) != 0 {
		t.Fatalf("last line is not a running summary: %v", last)
	}
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("%s not empty after teardown: %v", dir, ents)
	}
}

// TestFailedPodExit1 checks a failing pod exits 1 with stage, step, reason
// and the runtime's message, and is torn down.
func TestFailedPodExit1(t *testing.T) {
	root, logs := dirs(t)
	f := simPod(t, "fail", map[string]string{"sim.podstep.dev/create-error.app": "failed to create containerd container: boom"})
	code, out, _ := run(t, "run", "--auto", "--sim", "--no-color", "-f", f, "--root-dir", root, "--log-dir", logs)
	if code != ExitPodFailed {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	want := "error: stage containers, step create/app: CreateContainerError: failed to create containerd container: boom"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	assertEmpty(t, filepath.Join(root, "pods"))
}

// TestStdinManifest reads the manifest from -f -.
func TestStdinManifest(t *testing.T) {
	root, logs := dirs(t)
	data, _ := os.ReadFile("../../testdata/pods/hello.yaml")
	var out bytes.Buffer
	code := Execute([]string{"run", "--auto", "--sim", "-f", "-", "--grace-period", "0", "--root-dir", root, "--log-dir", logs},
		bytes.NewReader(data), &out, &bytes.Buffer{})
	if code != 0 || !strings.Contains(out.String(), "STATUS Running") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

// TestInterrupt sends SIGINT while StartContainer is in flight (the
// simulated runtime takes 1.5 s to answer it) and checks podstep waits for
// the answer rather than abandoning the call (an abandoned start leaves a
// container the runtime will not remove), then tears the pod down and exits
// 130.
func TestInterrupt(t *testing.T) {
	root, logs := dirs(t)
	f := slowPod(t, map[string]string{"StartContainer": "1500ms"})
	var signalled time.Time
	res := stream(t, time.Minute, func(p *exec.Cmd, line string) {
		// The create step is done: StartContainer (delayed 1.5 s) is in flight.
		if signalled.IsZero() && strings.Contains(line, `"name":"create/app"`) {
			time.Sleep(200 * time.Millisecond)
			if err := p.Process.Signal(syscall.SIGINT); err != nil {
				t.Errorf("SIGINT: %v", err)
			}
			signalled = time.Now()
		}
	}, "run", "--auto", "--sim", "-o", "json", "-f", f, "--grace-period", "0", "--root-dir", root, "--log-dir", logs)
	lines := res.lines
	if signalled.IsZero() {
		t.Fatalf("never reached create/app: %s", strings.Join(lines, "\n"))
	}
	if res.code != ExitInterrupted {
		t.Fatalf("exit = %d, want 130; stderr %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "podstep: interrupted: torn down") {
		t.Errorf("stderr = %q, want it to say interrupted: torn down", res.stderr)
	}
	all := strings.Join(lines, "\n")
	for _, l := range lines {
		var st struct{ Name, State, Message string }
		if json.Unmarshal([]byte(l), &st) == nil && st.Name == "start/app" && st.State != "done" {
			t.Errorf("start/app %s (%s): the StartContainer in flight was abandoned", st.State, st.Message)
		}
	}
	for _, step := range []string{"stop-containers", "stop-sandbox", "remove-containers", "remove-sandbox", "remove-dirs"} {
		if !strings.Contains(all, `"name":"`+step+`"`) {
			t.Errorf("teardown step %s not run", step)
		}
	}
	if !strings.Contains(all, `"outcome":"interrupted"`) {
		t.Errorf("summary does not say interrupted")
	}
	assertEmpty(t, filepath.Join(root, "pods"))
	assertEmpty(t, logs)
}

func TestPlanCrictl(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "plan", "-f", "../../testdata/pods/init.yaml", "--crictl", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// --crictl prints what it wrote, and only that.
	if want := strings.Join([]string{filepath.Join(dir, "pod-config.json"), filepath.Join(dir, "setup-container-config.json"),
		filepath.Join(dir, "app-container-config.json")}, "\n") + "\n"; out != want {
		t.Errorf("stdout = %q, want the files written:\n%s", out, want)
	}
	// With -o, the plan too.
	_, out, _ = run(t, "plan", "-f", "../../testdata/pods/init.yaml", "--crictl", dir, "-o", "yaml")
	for _, want := range []string{"RunPodSandbox:", "CreateContainer:", "kubelet: kubeGenericRuntimeManager.startContainer"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan -o yaml --crictl lacks %q", want)
		}
	}
	for _, f := range []string{"pod-config.json", "setup-container-config.json", "app-container-config.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil || v["metadata"] == nil {
			t.Errorf("%s: not a config with metadata: %v", f, err)
		}
	}
}

// TestPlanCrictlSubPath: as root, a subPath mount's host_path is the bind
// mount `podstep run` makes under volume-subpaths, which crictl does not
// make; the note says so. Without root it is <volume>/<subPath>: no note.
func TestPlanCrictlSubPath(t *testing.T) {
	code, _, errOut := run(t, "plan", "-f", "../../testdata/pods/volumes.yaml", "--crictl", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	note := "note: mount /etc/app.conf of app is a subPath: its host_path "
	if got := strings.Contains(errOut, note); got != (os.Geteuid() == 0) {
		t.Errorf("root %v, note %q shown %v:\n%s", os.Geteuid() == 0, note, got, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != 0 || !strings.Contains(out, "podstep ") || !strings.Contains(out, "cri-api") {
		t.Fatalf("version: %d %q", code, out)
	}
}

// TestPlanHidesSecrets checks `podstep plan` (yaml, json, --crictl) shows a
// Secret-sourced env var and a registry password only as <redacted>, in
// clear or base64 (CRI env values are bytes, which protobuf JSON prints in
// base64), while the PullImage request does carry the matched user.
func TestPlanHidesSecrets(t *testing.T) {
	const envValue, password = "TopSecretEnv-4411", "RegistryPw-9932"
	dockercfg := base64.StdEncoding.EncodeToString([]byte(`{"auths":{"registry.example:5000":{"username":"bob","password":"` + password + `"}}}`))
	manifest := `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: ` + envValue + `
---
apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ` + dockercfg + `
---
apiVersion: v1
kind: Pod
metadata:
  name: secrets
spec:
  imagePullSecrets:
  - name: regcred
  containers:
  - name: app
    image: registry.example:5000/team/app:1
    imagePullPolicy: Always
    env:
    - name: DB_PASSWORD
      valueFrom:
        secretKeyRef:
          name: db
          key: password
`
	file := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	crictl := t.TempDir()
	forbidden := []string{envValue, password, base64.StdEncoding.EncodeToString([]byte(envValue)),
		base64.StdEncoding.EncodeToString([]byte(password)), dockercfg}
	var outputs []string
	for _, args := range [][]string{{"plan", "-f", file}, {"plan", "-o", "json", "-f", file}, {"plan", "--crictl", crictl, "-f", file}} {
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		outputs = append(outputs, stdout, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(crictl, "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		outputs = append(outputs, string(b))
	}
	all := strings.Join(outputs, "\n")
	for _, s := range forbidden {
		if strings.Contains(all, s) {
			t.Errorf("plan output contains the secret %q", s)
		}
	}
	if !strings.Contains(outputs[0], "username: bob") || !strings.Contains(outputs[0], "password: <redacted>") {
		t.Errorf("the planned PullImage does not show the matched credential (user bob, password redacted):\n%s", outputs[0])
	}
}
