package sim

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/probe"
)

var sandboxAddrRE = regexp.MustCompile(`^127\.(12[89]|1[3-9][0-9]|2[0-4][0-9]|25[0-4])\.([0-9]+)\.([0-9]+)$`)

// isSandboxAddr says whether ip is in the simulator's sandbox block.
func isSandboxAddr(ip string) bool {
	m := sandboxAddrRE.FindStringSubmatch(ip)
	if m == nil {
		return false
	}
	b, _ := strconv.Atoi(m[2])
	c, _ := strconv.Atoi(m[3])
	return b <= 255 && c >= 1 && c <= 254
}

func TestLoopbackIP(t *testing.T) {
	for _, tc := range []struct {
		n    uint32
		want string
	}{
		{0, "127.128.0.1"},
		{253, "127.128.0.254"},
		{254, "127.128.1.1"},
		{254 * 256, "127.129.0.1"},
		{loopbackSpace - 1, "127.254.255.254"},
	} {
		if got := loopbackIP(tc.n); got != tc.want || !isSandboxAddr(got) {
			t.Errorf("loopbackIP(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestSandboxAddress: every non-host-network sandbox gets a loopback
// address derived from its name (the same in every run), two live
// sandboxes never share one, even in two simulators of one process, and a
// host-network sandbox gets none.
func TestSandboxAddress(t *testing.T) {
	e1, e2 := newEnv(t), newEnv(t)
	a := e1.sandboxStatus(e1.runSandbox(sandboxConfig("web", nil))).Network.Ip
	b := e1.sandboxStatus(e1.runSandbox(sandboxConfig("db", nil))).Network.Ip
	same := e2.sandboxStatus(e2.runSandbox(sandboxConfig("web", nil))).Network.Ip
	host := sandboxConfig("host", nil)
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
	h := e1.sandboxStatus(e1.runSandbox(host)).Network.Ip
	for _, tc := range []struct {
		what string
		ok   bool
	}{
		{"web has a sandbox address: " + a, isSandboxAddr(a)},
		{"db has a sandbox address: " + b, isSandboxAddr(b)},
		{"web and db differ", a != b},
		{"the second web (another simulator, web still live) gets another: " + same, isSandboxAddr(same) && same != a},
		{"web's address is its name's hash", a == loopbackIP(hashIndex(makeSandboxName(sandboxConfig("web", nil).Metadata)))},
		{"host network has no IP: " + h, h == ""},
	} {
		if !tc.ok {
			t.Error(tc.what)
		}
	}
}

// portsAnnotation is the io.kubernetes.container.ports annotation the
// kubelet sets for ports (newContainerAnnotations).
func portsAnnotation(ports ...corev1.ContainerPort) map[string]string {
	var b strings.Builder
	b.WriteString("[")
	for i, p := range ports {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"containerPort":` + strconv.Itoa(int(p.ContainerPort)))
		if p.Protocol != "" {
			b.WriteString(`,"protocol":"` + string(p.Protocol) + `"`)
		}
		b.WriteString("}")
	}
	b.WriteString("]")
	return map[string]string{annotationContainerPorts: b.String()}
}

// freePort is a TCP port nothing on 127.0.0.1 listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServeProbes: a started container that keeps running serves its
// declared TCP ports and the ports the engine says its probes reach;
// podstep's own probers (internal/probe) get what a healthy server gives,
// or what the probe-fail fault says.
func TestServeProbes(t *testing.T) {
	const port = 8080
	svc := "grpc.health.v1.Health"
	tests := []struct {
		name     string
		ann      map[string]string // the pod's
		ctrAnn   map[string]string // the container's
		cmd      []string
		md       string // MetadataProbePorts
		hostNet  bool
		httpWant probe.Outcome
		httpOut  string
		tcpWant  probe.Outcome
		grpcWant probe.Outcome
		grpcOut  string
	}{
		{name: "declared port", ctrAnn: portsAnnotation(corev1.ContainerPort{ContainerPort: port}), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Success, tcpWant: probe.Success, grpcWant: probe.Success, grpcOut: "service healthy"},
		{name: "port declared TCP explicitly", ctrAnn: portsAnnotation(corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Success, tcpWant: probe.Success, grpcWant: probe.Success},
		{name: "undeclared port a probe names", md: strconv.Itoa(port), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Success, tcpWant: probe.Success, grpcWant: probe.Success},
		{name: "an unknown entrypoint keeps running and serves", ctrAnn: portsAnnotation(corev1.ContainerPort{ContainerPort: port}),
			httpWant: probe.Success, tcpWant: probe.Success, grpcWant: probe.Success},
		{name: "UDP port is not served", ctrAnn: portsAnnotation(corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolUDP}), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Failure, httpOut: "connection refused", tcpWant: probe.Failure, grpcWant: probe.Failure, grpcOut: "timeout: failed to connect service"},
		{name: "a container that exited serves nothing", ctrAnn: portsAnnotation(corev1.ContainerPort{ContainerPort: port}), cmd: []string{"sh", "-c", "exit 0"},
			httpWant: probe.Failure, httpOut: "connection refused", tcpWant: probe.Failure, grpcWant: probe.Failure},
		{name: "probe-fail 500", ann: map[string]string{AnnotationProbeFail + "c": "500"}, md: strconv.Itoa(port), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Failure, httpOut: "HTTP probe failed with statuscode: 500", tcpWant: probe.Success,
			grpcWant: probe.Failure, grpcOut: `service unhealthy (responded with "NOT_SERVING")`},
		{name: "probe-fail 503 on the container", ctrAnn: map[string]string{AnnotationProbeFail + "c": "503", annotationContainerPorts: `[{"containerPort":8080}]`}, cmd: []string{"sleep", "infinity"},
			httpWant: probe.Failure, httpOut: "statuscode: 503", tcpWant: probe.Success, grpcWant: probe.Failure},
		{name: "probe-fail refuse", ann: map[string]string{AnnotationProbeFail + "c": "refuse"}, md: strconv.Itoa(port), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Failure, httpOut: "connection refused", tcpWant: probe.Failure, grpcWant: probe.Failure},
		{name: "probe-fail unreadable counts as 500", ann: map[string]string{AnnotationProbeFail + "c": "nope"}, md: strconv.Itoa(port), cmd: []string{"sleep", "infinity"},
			httpWant: probe.Failure, httpOut: "statuscode: 500", tcpWant: probe.Success, grpcWant: probe.Failure},
		{name: "host network serves on 127.0.0.1", hostNet: true, md: "HOSTPORT", cmd: []string{"sleep", "infinity"},
			httpWant: probe.Success, tcpWant: probe.Success, grpcWant: probe.Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := port
			md := tc.md
			if tc.hostNet {
				p = freePort(t)
				md = strconv.Itoa(p)
			}
			sbCfg := sandboxConfig("web", tc.ann)
			if tc.hostNet {
				sbCfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
			}
			sbID := e.runSandbox(sbCfg)
			ip := e.sandboxStatus(sbID).Network.Ip
			if tc.hostNet {
				ip = HostNetworkAddress
			}
			cfg := containerConfig("c", tc.cmd...)
			cfg.Annotations = tc.ctrAnn
			if tc.cmd == nil {
				cfg.Image = &runtimeapi.ImageSpec{Image: "docker.io/library/nginx:1.27"}
				if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: cfg.Image}); err != nil {
					t.Fatal(err)
				}
			}
			ctx := e.ctx
			if md != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, MetadataProbePorts, md)
			}
			resp, err := e.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: cfg, SandboxConfig: sbCfg})
			if err != nil {
				t.Fatal(err)
			}
			e.start(resp.ContainerId)
			if strings.Contains(strings.Join(tc.cmd, " "), "exit") {
				e.clk.Advance(time.Second) // the process has exited
				if st := e.status(resp.ContainerId); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
					t.Fatalf("state %s, want exited", st.State)
				}
			}
			target := corev1.Container{Name: "c"}
			ctx = context.Background()
			for _, scheme := range []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS} {
				r := probe.HTTPGet(ctx, &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(p), Scheme: scheme}, ip, &target, time.Second, "")
				if r.Outcome != tc.httpWant || !strings.Contains(r.Output, tc.httpOut) {
					t.Errorf("httpGet %s: %s %q, want %s %q", scheme, r.Outcome, r.Output, tc.httpWant, tc.httpOut)
				}
			}
			r := probe.TCPSocket(ctx, &corev1.TCPSocketAction{Port: intstr.FromInt(p)}, ip, &target, time.Second)
			if r.Outcome != tc.tcpWant {
				t.Errorf("tcpSocket: %s %q, want %s", r.Outcome, r.Output, tc.tcpWant)
			}
			r = probe.GRPC(ctx, &corev1.GRPCAction{Port: int32(p), Service: &svc}, ip, 300*time.Millisecond)
			if r.Outcome != tc.grpcWant || !strings.Contains(r.Output, tc.grpcOut) {
				t.Errorf("grpc: %s %q, want %s %q", r.Outcome, r.Output, tc.grpcWant, tc.grpcOut)
			}
		})
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// refused says whether a connection to addr is refused (nothing listens).
func refused(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = conn.Close()
		return errors.New("connected: a listener is left")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	return nil
}

// TestListenersClosed: every way a container stops serving closes its
// listeners and connections: a dial afterwards is refused, no listener is
// counted and no file descriptor is left.
func TestListenersClosed(t *testing.T) {
	tests := []struct {
		name     string
		cmd      []string // default: sleep infinity
		teardown func(e *env, sbID, ctrID string)
	}{
		{"the process exits by itself, unobserved", []string{"sh", "-c", "sleep 1; exit 0"}, func(e *env, _, _ string) {
			// Nothing asks for its status: the exit is not applied, yet
			// its listeners must close 1s and InitRunTime after the start.
			for end := time.Now().Add(5 * time.Second); OpenListeners() > 0 && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
		}},
		{"StopContainer", nil, func(e *env, _, id string) {
			if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"RemoveContainer", nil, func(e *env, _, id string) {
			if _, err := e.rt.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"StopPodSandbox", nil, func(e *env, sbID, _ string) {
			if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"RemovePodSandbox", nil, func(e *env, sbID, _ string) {
			if _, err := e.rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"Server.Stop", nil, func(e *env, _, _ string) { e.srv.Stop() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			before := OpenListeners()
			sbCfg := sandboxConfig("web", nil)
			sbID := e.runSandbox(sbCfg)
			ip := e.sandboxStatus(sbID).Network.Ip
			// Warm up what a first probe opens once for the process.
			probe.HTTPGet(context.Background(), &corev1.HTTPGetAction{Port: intstr.FromInt(8080)}, ip, &corev1.Container{}, time.Second, "")
			fds := openFDs(t)
			cmd := tc.cmd
			if cmd == nil {
				cmd = []string{"sleep", "infinity"}
			}
			cfg := containerConfig("c", cmd...)
			cfg.Annotations = portsAnnotation(corev1.ContainerPort{ContainerPort: 8080}, corev1.ContainerPort{ContainerPort: 9090})
			id := e.create(sbID, sbCfg, cfg)
			e.start(id)
			addrs := []string{net.JoinHostPort(ip, "8080"), net.JoinHostPort(ip, "9090")}
			// Connections of every kind are open when it stops: one HTTP
			// exchange done, one idle TCP connection held.
			target := corev1.Container{Name: "c"}
			if r := probe.HTTPGet(context.Background(), &corev1.HTTPGetAction{Port: intstr.FromInt(8080)}, ip, &target, time.Second, ""); r.Outcome != probe.Success {
				t.Fatalf("before teardown: %s %s", r.Outcome, r.Output)
			}
			held, err := net.Dial("tcp", addrs[1])
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = held.Close() }()
			if got := OpenListeners() - before; got != 2 {
				t.Fatalf("%d listeners open, want 2", got)
			}
			tc.teardown(e, sbID, id)
			for _, a := range addrs {
				if err := refused(a); err != nil {
					t.Errorf("dial %s after %s: %v", a, tc.name, err)
				}
			}
			if got := OpenListeners() - before; got != 0 {
				t.Errorf("%d listeners left after %s", got, tc.name)
			}
			// The held connection was closed by the server: a read ends.
			_ = held.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := held.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("held connection still open after %s: %v", tc.name, err)
			}
			_ = held.Close()
			// The probe client's own socket closes in the background once
			// its body is read: wait for the count to come down.
			got := openFDs(t)
			for end := time.Now().Add(3 * time.Second); got > fds && time.Now().Before(end); got = openFDs(t) {
				time.Sleep(10 * time.Millisecond)
			}
			if got > fds {
				t.Errorf("%d file descriptors open after %s, %d before the container started", got, tc.name, fds)
			}
		})
	}
}

// BenchmarkServe measures what serving costs a container with two ports:
// listening at StartContainer and closing at its exit.
func BenchmarkServe(b *testing.B) {
	ip := allocLoopback("bench_default_uid_0")
	defer releaseLoopback(ip)
	if _, err := simCert(); err != nil { // made once per process, not per container
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sv := listen(ip, []int{8080, 9090}, false, 0)
		if len(sv.addrs) != 2 {
			b.Fatalf("listening on %v", sv.addrs)
		}
		sv.close()
	}
}
