package sim

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
)

// MetadataProbePorts is the gRPC metadata key podstep's engine sends with
// CreateContainer on the simulator: the TCP ports the container's probes
// and HTTP hooks reach, comma separated ("8080,9000"). A kubelet sends no
// such thing (the runtime never sees probes); it exists because the
// simulator cannot read which ports a container's program binds, and a
// probe may name a port its containerPorts do not declare. The simulator
// listens on these besides the declared ones.
const MetadataProbePorts = "podstep-sim-probe-ports"

// AnnotationProbeFail (+ CONTAINER) makes the container's network
// endpoints fail the probes that reach them: "refuse" listens on nothing
// (connections are refused), an HTTP status code N (100-599) answers every
// HTTP request with N and every gRPC health Check with NOT_SERVING (TCP
// connections are still accepted).
const AnnotationProbeFail = AnnotationPrefix + "probe-fail."

// ProbeFailRefuse is the AnnotationProbeFail value that refuses connections.
const ProbeFailRefuse = "refuse"

// HostNetworkAddress is where the simulator serves the ports of a
// host-network pod's containers: the loopback address standing for the
// node's IP (the simulator never opens a port on a real interface).
const HostNetworkAddress = "127.0.0.1"

// annotationContainerPorts is the container annotation the kubelet sets to
// the container's ports as JSON (newContainerAnnotations,
// pkg/kubelet/kuberuntime/labels.go).
const annotationContainerPorts = "io.kubernetes.container.ports"

// The loopback block sandboxes take their IPs from: 127.A.B.C with A in
// [128, 254], B in [0, 255], C in [1, 254]. Linux routes all of 127/8 to
// lo, so an address there needs no setup; the low half of 127/8 is left to
// the addresses systems use (127.0.0.1, 127.0.0.53, 127.0.1.1).
const (
	loopbackFirstA = 128
	loopbackAs     = 127
	loopbackCs     = 254
	loopbackSpace  = loopbackAs * 256 * loopbackCs
)

// loopbackHeld is the sandbox addresses every simulator of this process
// holds, so that two simulators in one process (tests, bench) never share
// one.
var loopbackHeld = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// allocLoopback returns the sandbox address for the reserved sandbox name
// name: derived from its hash (so the same pod gets the same address in
// every run, and different pods, even in different processes, almost
// never share one), the next free one when a simulator of this process
// holds it.
func allocLoopback(name string) string {
	n := hashIndex(name)
	loopbackHeld.Lock()
	defer loopbackHeld.Unlock()
	for i := uint32(0); i < loopbackSpace; i++ {
		ip := loopbackIP((n + i) % loopbackSpace)
		if !loopbackHeld.m[ip] {
			loopbackHeld.m[ip] = true
			return ip
		}
	}
	return "" // 8 million live sandboxes
}

// hashIndex is the index in the sandbox block name hashes to.
func hashIndex(name string) uint32 {
	sum := sha256.Sum256([]byte(name))
	return (uint32(sum[0])<<16 | uint32(sum[1])<<8 | uint32(sum[2])) % loopbackSpace
}

// loopbackIP is the n-th address of the sandbox block.
func loopbackIP(n uint32) string {
	c := n % loopbackCs
	b := (n / loopbackCs) % 256
	a := n / (loopbackCs * 256)
	return fmt.Sprintf("127.%d.%d.%d", loopbackFirstA+a, b, 1+c)
}

// releaseLoopback gives a sandbox address back.
func releaseLoopback(ip string) {
	if ip == "" {
		return
	}
	loopbackHeld.Lock()
	delete(loopbackHeld.m, ip)
	loopbackHeld.Unlock()
}

// openListeners counts the listeners every simulator of this process has
// open (for tests: none may be left after teardown).
var openListeners struct {
	sync.Mutex
	n int
}

// OpenListeners is the number of container ports the simulators of this
// process are listening on.
func OpenListeners() int {
	openListeners.Lock()
	defer openListeners.Unlock()
	return openListeners.n
}

// listenErrors are the addresses a simulator of this process could not
// listen on for a running container, and why (ListenError).
var listenErrors = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// listenFailed records (err nil: forgets) that addr could not be listened on.
func listenFailed(addr string, err error) {
	listenErrors.Lock()
	defer listenErrors.Unlock()
	if err == nil {
		delete(listenErrors.m, addr)
		return
	}
	listenErrors.m[addr] = err.Error()
}

// ListenError says why a simulator of this process could not listen on
// addr (host:port) for a container that runs now: another process of
// this machine holds the port (a host-network pod's port on 127.0.0.1, or
// the same pod run by another podstep at once), so a probe sent there
// reaches that process instead. ok is false when it listens there, or was
// never asked to (a simulator in another process: podstep bench).
func ListenError(addr string) (msg string, ok bool) {
	listenErrors.Lock()
	defer listenErrors.Unlock()
	msg, ok = listenErrors.m[addr]
	return msg, ok
}

func countListeners(d int) {
	openListeners.Lock()
	openListeners.n += d
	openListeners.Unlock()
}

// declaredPorts reads the TCP ports the container declares from the
// io.kubernetes.container.ports annotation the kubelet sets on its config.
// A port without a protocol is TCP, as the API defaults it; UDP and SCTP
// ports are not served.
func declaredPorts(ann map[string]string) []int {
	v, ok := ann[annotationContainerPorts]
	if !ok {
		return nil
	}
	var ports []corev1.ContainerPort
	if err := json.Unmarshal([]byte(v), &ports); err != nil {
		return nil
	}
	var out []int
	for _, p := range ports {
		if (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) && p.ContainerPort > 0 && p.ContainerPort < 65536 {
			out = append(out, int(p.ContainerPort))
		}
	}
	return out
}

// probePorts is the MetadataProbePorts the engine sent with a
// CreateContainer.
func probePorts(ctx context.Context) []int {
	md, _ := metadata.FromIncomingContext(ctx)
	var out []int
	for _, v := range md.Get(MetadataProbePorts) {
		for f := range strings.SplitSeq(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 && n < 65536 {
				out = append(out, n)
			}
		}
	}
	return out
}

// FormatProbePorts is the MetadataProbePorts value for ports.
func FormatProbePorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// ProbeFailure reads the AnnotationProbeFail fault of container name from
// ann: refuse says connections are refused, code is the HTTP status every
// request gets (0 when neither is set). A value that is neither "refuse"
// nor a status code 100-599 is an error.
func ProbeFailure(ann map[string]string, name string) (refuse bool, code int, err error) {
	v, ok := containerFault(ann, AnnotationProbeFail, name)
	if !ok {
		return false, 0, nil
	}
	v = strings.TrimSpace(v)
	if v == ProbeFailRefuse {
		return true, 0, nil
	}
	n, perr := strconv.Atoi(v)
	if perr != nil || n < 100 || n > 599 {
		return false, 0, fmt.Errorf("%s%s: %q is neither %q nor an HTTP status code (100-599)", AnnotationProbeFail, name, v, ProbeFailRefuse)
	}
	return false, n, nil
}

// serving is a running container's network endpoints: one listener per
// port on its sandbox's address, all served by one HTTP server that
// answers HTTP/1.1 requests, in plain text or TLS (listen_tls.go), with its
// status and HTTP/2 gRPC requests with the grpc.health.v1 service (a TCP
// probe only needs the accept).
type serving struct {
	srv    *http.Server
	grpc   *grpc.Server
	status int // the HTTP status every request gets
	addrs  []string
	failed []string // the addresses it could not listen on (ListenError)
	served sync.WaitGroup
	once   sync.Once
	n      int // listeners opened

	mu    sync.Mutex
	timer *time.Timer // closes it when the process exits by itself
}

// closeAfter closes the endpoints after d: when a process that exits by
// itself does (its exit is applied lazily, when the container is next
// observed; the listeners must not outlive it meanwhile).
func (sv *serving) closeAfter(d time.Duration) {
	if sv == nil || sv.srv == nil {
		return
	}
	sv.mu.Lock()
	sv.timer = time.AfterFunc(d, sv.close)
	sv.mu.Unlock()
}

// listen serves ports on ip for a container: nothing when refuse, else
// every HTTP request gets code (200 when 0). It never fails: a port that
// cannot be listened on (another process holds it) is left out and noted
// in failed and ListenError.
func listen(ip string, ports []int, refuse bool, code int) *serving {
	healthy := code == 0
	if code == 0 {
		code = http.StatusOK
	}
	sv := &serving{status: code}
	if refuse || ip == "" || len(ports) == 0 {
		return sv
	}
	sv.grpc = grpc.NewServer()
	healthpb.RegisterHealthServer(sv.grpc, health{serving: healthy})
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	sv.srv = &http.Server{Handler: sv, Protocols: p, ReadHeaderTimeout: 10 * time.Second}
	cfg, err := simCert()
	if err != nil {
		cfg = nil // plain text only: an HTTPS probe then fails its handshake
	}
	var lc net.ListenConfig
	for _, port := range ports {
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		if slices.Contains(sv.addrs, addr) {
			continue
		}
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			sv.failed = append(sv.failed, addr)
			listenFailed(addr, err)
			continue
		}
		sv.addrs = append(sv.addrs, addr)
		sv.n++
		countListeners(1)
		sl := newSniffListener(ln, cfg)
		sv.served.Add(1)
		go func() {
			defer sv.served.Done()
			_ = sv.srv.Serve(sl)
		}()
	}
	return sv
}

// ServeHTTP answers a gRPC request with the health service, any other
// request with the container's status.
func (sv *serving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		sv.grpc.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(sv.status)
	_, _ = fmt.Fprintln(w, http.StatusText(sv.status))
}

// close closes the listeners and every connection, and waits until they
// are. Safe on nil and more than once.
func (sv *serving) close() {
	if sv == nil {
		return
	}
	sv.once.Do(func() {
		sv.mu.Lock()
		if sv.timer != nil {
			sv.timer.Stop()
		}
		sv.mu.Unlock()
		for _, a := range sv.failed {
			listenFailed(a, nil)
		}
		if sv.srv == nil {
			return
		}
		_ = sv.srv.Close()
		sv.served.Wait()
		sv.grpc.Stop()
		countListeners(-sv.n)
	})
}

// health is the grpc.health.v1 service of a simulated container: SERVING
// for every service name (the simulator cannot know which services the
// program registers), NOT_SERVING under the probe-fail fault.
type health struct {
	healthpb.UnimplementedHealthServer
	serving bool
}

// Check implements healthpb.HealthServer.
func (h health) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st := healthpb.HealthCheckResponse_SERVING
	if !h.serving {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// serveContainer starts serving a started container:
// its declared TCP ports and the ports its probes reach, on its sandbox's
// address (HostNetworkAddress for a host-network sandbox). Callers hold
// s.mu.
func (s *service) serveContainer(c *container, sb *sandbox) {
	ip := sb.ip
	if hostNetwork(sb.config) {
		ip = HostNetworkAddress
	}
	ports := append(declaredPorts(c.config.GetAnnotations()), c.probePorts...)
	refuse, code, err := ProbeFailure(c.faults, c.config.GetMetadata().GetName())
	if err != nil {
		// An unreadable fault fails every probe: the test that set it
		// meant a failure, and silently serving would hide the typo.
		code = http.StatusInternalServerError
	}
	c.serve = listen(ip, ports, refuse, code)
}

// closeAll closes every container's endpoints and gives back every
// sandbox address: the server stops.
func (s *service) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		c.serve.close()
	}
	for _, sb := range s.sandboxes {
		releaseLoopback(sb.ip)
	}
}
