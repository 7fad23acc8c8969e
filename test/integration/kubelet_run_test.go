//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// kubeletNode is the node name the test kubelet runs as: static pods are
// named <pod>-<node>.
const kubeletNode = "podstep-kubelet"

// kubelet is a real kubelet v1.37.0 (PODSTEP_KUBELET, built by
// hack/kubelet-build.sh) run standalone as the reference traces' was
// (testdata/kubelet-traces/README.md): a config file, no kubeconfig, static
// pods from a manifest folder, its root dir in a temp dir, its server on
// loopback, and podstep proxy's socket as its runtime endpoint.
type kubelet struct {
	dir, manifests, root, sock, logFile string
	cmd                                 *exec.Cmd
	exited                              chan error
	healthz                             int
}

// kubeletEnv is the kubelet binary and its ports: PODSTEP_KUBELET,
// PODSTEP_KUBELET_PORT (default 10350) and PODSTEP_KUBELET_HEALTHZ_PORT
// (default 10348). Without the binary the test is skipped loudly, and
// fails under CI=true.
func kubeletEnv(t *testing.T) (bin string, port, healthz int) {
	t.Helper()
	bin = testenv.Require(t, "KUBELET", "hack/test.sh builds the kubelet with hack/kubelet-build.sh and sets it", "PODSTEP_KUBELET")[0]
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("PODSTEP_KUBELET: %v", err)
	}
	port, healthz = 10350, 10348
	for _, v := range []struct {
		name string
		p    *int
	}{{"PODSTEP_KUBELET_PORT", &port}, {"PODSTEP_KUBELET_HEALTHZ_PORT", &healthz}} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", v.name, s, err)
			}
			*v.p = n
		}
	}
	return bin, port, healthz
}

// kubeletConfig is testdata/kubelet-traces/kubelet-config.yaml with this
// test's paths and ports.
func kubeletConfig(sock, manifests string, port, healthz int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
imageServiceEndpoint: unix://%[1]s
staticPodPath: %[2]s
failSwapOn: false
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
address: 127.0.0.1
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`, sock, manifests, port, healthz)
}

// startKubelet starts the kubelet (the proxy must already listen on sock:
// the kubelet asks the runtime's Version as it starts) and waits for its
// healthz. extra lines are added to its config (tracing:).
func startKubelet(t *testing.T, bin, dir, sock string, port, healthz int, extra ...string) *kubelet {
	t.Helper()
	k := &kubelet{dir: dir, manifests: filepath.Join(dir, "manifests"), root: filepath.Join(dir, "root"), sock: sock,
		logFile: filepath.Join(dir, "kubelet.log"), exited: make(chan error, 1), healthz: healthz}
	for _, d := range []string{k.manifests, k.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "kubelet-config.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(sock, k.manifests, port, healthz)+strings.Join(extra, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(k.logFile)
	if err != nil {
		t.Fatal(err)
	}
	k.cmd = exec.Command(bin, "--config="+cfg, "--root-dir="+k.root, "--hostname-override="+kubeletNode, "--v=2")
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kubelet: %v", err)
	}
	go func() { k.exited <- k.cmd.Wait(); logf.Close() }()
	t.Logf("kubelet %s started (pid %d), log %s", bin, k.cmd.Process.Pid, k.logFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) == "ok" {
				return k
			}
		}
		select {
		case err := <-k.exited:
			t.Fatalf("the kubelet exited while starting: %v\n%s", err, k.logTail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet's healthz did not answer ok within 60s (%v)\n%s", err, k.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logTail is the end of the kubelet's log, for failure messages.
func (k *kubelet) logTail(n int) string {
	b, _ := os.ReadFile(k.logFile)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- kubelet log (end)\n" + strings.Join(lines, "\n")
}

// drop puts a static pod manifest into the manifest folder with an atomic
// rename, as the reference traces were made; name is the pod's name.
func (k *kubelet) drop(t *testing.T, e *env, file, name string) {
	t.Helper()
	b, err := os.ReadFile(e.local(filepath.Join("kubelet", strings.TrimSuffix(file, ".yaml"))))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\n  name: "+strings.TrimSuffix(file, ".yaml")+"\n", "\n  name: "+name+"\n", 1)
	tmp := filepath.Join(k.dir, "."+name+".yaml")
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.manifests, name+".yaml")); err != nil {
		t.Fatal(err)
	}
}

// stop ends the kubelet (SIGTERM, then SIGKILL after 10 s) and waits.
func (k *kubelet) stop(t *testing.T) {
	t.Helper()
	if k.cmd.ProcessState != nil {
		return
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM) // fails only when it has just exited: exited says so
	select {
	case err := <-k.exited:
		t.Logf("the kubelet after SIGTERM: %v", err)
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL) // its process group; as above
		t.Logf("the kubelet after SIGTERM, then SIGKILL 10 s later: %v", <-k.exited)
	}
}

// kubeletSandboxes are the sandboxes of the test kubelet's static pods.
func kubeletSandboxes(t *testing.T, c *criClient) []*runtimeapi.PodSandbox {
	t.Helper()
	resp, err := c.rt.ListPodSandbox(ctx10(t), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("CRI ListPodSandbox: %v", err)
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range resp.Items {
		if strings.HasSuffix(s.GetMetadata().GetName(), "-"+kubeletNode) {
			out = append(out, s)
		}
	}
	return out
}

// removeKubeletPods removes what the kubelet left (for a test that failed
// before its pods were gone): other tests' pods must not meet them.
func removeKubeletPods(t *testing.T, c *criClient) []string {
	var left []string
	for _, s := range kubeletSandboxes(t, c) {
		left = append(left, s.Metadata.Name+" "+s.State.String())
		cs, _ := c.rt.ListContainers(ctx10(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: s.Id}})
		for _, ct := range cs.GetContainers() {
			if _, err := c.rt.StopContainer(ctx10(t), &runtimeapi.StopContainerRequest{ContainerId: ct.Id}); err != nil {
				t.Logf("removing the kubelet's leftovers: StopContainer %s: %v", ct.Id, err)
			}
			if _, err := c.rt.RemoveContainer(ctx10(t), &runtimeapi.RemoveContainerRequest{ContainerId: ct.Id}); err != nil {
				t.Logf("removing the kubelet's leftovers: RemoveContainer %s: %v", ct.Id, err)
			}
		}
		if _, err := c.rt.StopPodSandbox(ctx10(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("removing the kubelet's leftovers: StopPodSandbox %s: %v", s.Id, err)
		}
		if _, err := c.rt.RemovePodSandbox(ctx10(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("removing the kubelet's leftovers: RemovePodSandbox %s: %v", s.Id, err)
		}
	}
	return left
}

// proxyRun is one `podstep proxy --auto -o json` process, read as it runs.
type proxyRun struct {
	args   []string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	exited chan struct{}
	code   int

	mu      sync.Mutex
	raw     []string
	steps   []proxyStep
	held    []heldLine
	summary *summaryEvent
	polling map[string]int
}

// proxyStep is a step line, with the warnings the harness's stepEvent
// leaves out.
type proxyStep struct {
	stepEvent
	Warnings []string `json:"warnings"`
}

type heldLine struct {
	Pod    string `json:"pod"`
	Method string `json:"method"`
	Step   string `json:"step"`
	Stage  string `json:"stage"`
}

// startProxy runs `podstep proxy --listen unix://sock --upstream ENDPOINT
// --auto -o json` with args and waits until its socket answers.
func (e *env) startProxy(t *testing.T, sock string, args ...string) *proxyRun {
	t.Helper()
	p := &proxyRun{args: append([]string{"proxy", "--listen", "unix://" + sock, "--upstream", e.endpoint, "--auto", "-o", "json"}, args...),
		exited: make(chan struct{})}
	p.cmd = exec.Command(e.bin, p.args...)
	p.cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), e.extraEnv...)
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.line(sc.Bytes())
		}
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("podstep proxy exited at start (code %d)\n%s", p.code, p)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("podstep proxy's socket %s did not answer within 10s\n%s", sock, p)
		}
	}
}

func (p *proxyRun) line(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.raw = append(p.raw, string(b))
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &head) != nil {
		return
	}
	switch head.Type {
	case "step":
		var s proxyStep
		if json.Unmarshal(b, &s) == nil {
			p.steps = append(p.steps, s)
		}
	case "held":
		var h heldLine
		if json.Unmarshal(b, &h) == nil {
			p.held = append(p.held, h)
		}
	case "summary":
		var s summaryEvent
		if json.Unmarshal(b, &s) == nil {
			p.summary = &s
		}
	case "polling":
		var pl struct {
			Calls map[string]int `json:"calls"`
		}
		if json.Unmarshal(b, &pl) == nil {
			p.polling = pl.Calls
		}
	}
}

// String shows the run for a failure message: its steps in one line each.
func (p *proxyRun) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "podstep %s\n%d lines on stdout\n", strings.Join(p.args, " "), len(p.raw))
	for _, l := range p.raw {
		if !strings.Contains(l, `"type":"step"`) {
			fmt.Fprintf(&b, "  %.200s\n", l)
		}
	}
	for _, s := range p.steps {
		fmt.Fprintf(&b, "  step %2d %-12s %-20s %-6s %s %v\n", s.ID, s.Stage, s.Name, s.State, s.Summary, s.Warnings)
	}
	for _, h := range p.held {
		fmt.Fprintf(&b, "  held %s %s (%s)\n", h.Method, h.Step, h.Stage)
	}
	fmt.Fprintf(&b, "--- stderr\n%s", p.stderr.String())
	return b.String()
}

// waitCalled waits until a call went through the proxy: the kubelet's
// connection to it is up (after a proxy restart, the kubelet's gRPC
// client reconnects with a back-off of a second or more).
func (p *proxyRun) waitCalled(t *testing.T, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(p.stderrText(), "first call through the proxy"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no call through the proxy within %s\n%s", d, p)
		}
	}
}

// waitOutput waits up to d for the proxy's output to hold every one of
// wants; it returns that output (at the end of d, what there is) and the
// wants it lacks.
func (p *proxyRun) waitOutput(d time.Duration, wants ...string) (out string, missing []string) {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		out = strings.Join(p.raw, "\n")
		p.mu.Unlock()
		missing = missing[:0]
		for _, w := range wants {
			if !strings.Contains(out, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 || time.Now().After(end) {
			return out, missing
		}
	}
}

func (p *proxyRun) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitStep waits for a step line that matches.
func (p *proxyRun) waitStep(t *testing.T, k *kubelet, what string, d time.Duration, match func(proxyStep) bool) proxyStep {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		p.mu.Lock()
		for _, s := range p.steps {
			if match(s) {
				p.mu.Unlock()
				return s
			}
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no step %s within %s\n%s\n%s", what, d, p, k.logTail(30))
		}
	}
}

// stepNamed matches a step by name.
func stepNamed(name string) func(proxyStep) bool {
	return func(s proxyStep) bool { return s.Name == name }
}

// stop ends the proxy with SIGTERM and waits (10 s at most).
func (p *proxyRun) stop(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // fails only when it has just exited: exited says so
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill() // as above
		<-p.exited
		t.Errorf("podstep proxy did not exit within 10s of SIGTERM\n%s", p)
	}
	if p.code == 128+int(syscall.SIGTERM) {
		return 0 // stopped cleanly by our SIGTERM: 143 (docs/exit-codes.md)
	}
	return p.code
}

// names are the step names in order.
func (p *proxyRun) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.steps {
		out = append(out, s.Name)
	}
	return out
}

// inOrder says whether want appears in got in order (other steps between).
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// replayNames replays a recording with `podstep replay --auto -o json` and
// returns its steps' names.
func (e *env) replayNames(t *testing.T, rec string) []string {
	t.Helper()
	r := e.podstep(t, "replay", "--auto", "-o", "json", rec)
	if r.code != 0 {
		t.Fatalf("replay of %s failed\n%s", rec, r)
	}
	var out []string
	for _, s := range r.steps {
		out = append(out, s.Name)
	}
	return out
}

// podContainer is the running container name of the kubelet's pod, via the
// tests' own CRI client.
func podContainer(t *testing.T, c *criClient, pod, name string) *runtimeapi.Container {
	t.Helper()
	for _, ct := range c.containers(t, map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": name}) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return ct
		}
	}
	return nil
}

// unmountKubelet undoes the kubelet's own mounts under dir: it bind-mounts
// its root dir onto itself (rshared) as it starts, and leaves that when
// it stops.
func unmountKubelet(t *testing.T, dir string) {
	t.Helper()
	ms := testenv.MountsUnder(dir)
	for i := len(ms) - 1; i >= 0; i-- {
		if err := syscall.Unmount(ms[i], syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", ms[i], err)
		} else {
			t.Logf("unmounted the kubelet's %s", ms[i])
		}
	}
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
