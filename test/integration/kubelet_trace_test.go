//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

// TestKubeletTraceJaeger runs a real kubelet v1.37.0, tracing itself to a
// real Jaeger (its config's tracing: endpoint, every span sampled), through
// `podstep proxy --otlp-endpoint` to the same Jaeger, creates the hello
// static pod, and reads the traces back: the proxy's server spans for the
// pod's RunPodSandbox, CreateContainer and StartContainer, with the pod,
// container, podstep step and stage, and gRPC code; each under the
// kubelet's own CRI client span of the same method (the kubelet's
// traceparent is the parent), RunPodSandbox's under the kubelet's syncPod;
// and, on containerd 2.x (the harness exports its spans there too),
// containerd's server span of the same method under each of the proxy's.
// Debian's containerd 1.6 exports no spans: the test says so and checks
// the rest.
func TestKubeletTraceJaeger(t *testing.T) {
	e := setup(t)
	_, otlpGRPC, query := jaegerEnv(t)
	otlpHTTP := os.Getenv("PODSTEP_OTLP_ENDPOINT")
	bin, port, healthz := kubeletEnv(t)
	c := dialCRI(t, e.endpoint)
	dir, err := os.MkdirTemp("", "podstep-kubelet")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")
	var uid string // the pod's, from the spans
	service := fmt.Sprintf("podstep-proxy-%d", time.Now().UnixNano())
	te := *e
	te.extraEnv = []string{"OTEL_SERVICE_NAME=" + service}
	t.Logf("the proxy's spans: service %s", service)
	p := te.startProxy(t, sock, "--pod", "default/hello-"+kubeletNode, "--otlp-endpoint", otlpHTTP)

	// The kubelet's OTLP exporter is gRPC, host:port (component-base tracing).
	u, err := url.Parse(otlpGRPC)
	if err != nil {
		t.Fatal(err)
	}
	k := startKubelet(t, bin, dir, sock, port, healthz,
		"tracing:", "  endpoint: "+u.Host, "  samplingRatePerMillion: 1000000", "")
	t.Cleanup(func() {
		k.stop(t)
		if t.Failed() {
			keep := filepath.Join(os.TempDir(), "podstep-kubelet-trace-"+time.Now().Format("150405")+".log")
			if b, err := os.ReadFile(k.logFile); err == nil && os.WriteFile(keep, b, 0o644) == nil {
				t.Logf("the kubelet's log is kept in %s", keep)
			}
		}
		if left := removeKubeletPods(t, c); len(left) > 0 {
			t.Logf("removed the kubelet's pods: %v", left)
		}
		unmountKubelet(t, dir)
		// The kubelet's log dir of the pod (its container GC removes it later).
		if uid != "" {
			os.RemoveAll("/var/log/pods/default_hello-" + kubeletNode + "_" + uid)
		}
		for _, m := range testenv.MountsUnder(dir) {
			t.Errorf("mount left under the kubelet's dir: %s", m)
		}
		os.RemoveAll(dir)
	})
	name := "hello-" + kubeletNode
	p.waitCalled(t, 30*time.Second)
	k.drop(t, e, "hello.yaml", "hello")
	p.waitStep(t, k, "start/hello", 60*time.Second, stepNamed("start/hello"))
	time.Sleep(1500 * time.Millisecond)
	if code := p.stop(t); code != 0 {
		t.Fatalf("proxy exit %d\n%s", code, p)
	}
	exported := regexp.MustCompile(`podstep: [1-9][0-9]* spans of CRI calls exported to ` + regexp.QuoteMeta(otlpHTTP)).FindString(p.stderrText())
	t.Logf("the proxy said: %s", exported)
	if exported == "" || strings.Contains(p.stderrText(), "warning") {
		t.Errorf("want 'spans exported' and no warning on the proxy's stderr\n%s", p.stderrText())
	}

	methods := []string{"RunPodSandbox", "CreateContainer", "StartContainer"}
	steps := map[string]string{"RunPodSandbox": "run-sandbox", "CreateContainer": "create/hello", "StartContainer": "start/hello"}
	var spans map[string]*jaegerSpan
	var found map[string]*jaegerSpan
	var raw string
	ok := func() bool {
		found = map[string]*jaegerSpan{}
		for _, s := range spans {
			if s.service == service && s.tag("k8s.pod.name") == name {
				found[s.tag("rpc.method")] = s
			}
		}
		for _, m := range methods {
			s := found[m]
			if s == nil || spans[s.parent()] == nil {
				return false
			}
			if e.rt.major >= 2 && childOf(spans, s, "containerd") == nil {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		spans, raw = serviceSpans(t, query, service)
		if ok() || time.Now().After(deadline) {
			break
		}
	}
	// The kubelet exports its spans every 5 s (its batch span processor)
	// and not as it stops: it runs until they are in Jaeger.
	k.stop(t)
	if pw := os.Getenv("PODSTEP_REGISTRY_PASSWORD"); pw != "" && strings.Contains(raw, pw) {
		t.Errorf("the traces hold the registry password")
	}
	if s := found["RunPodSandbox"]; s != nil {
		uid = s.tag("k8s.pod.uid")
	}
	for _, m := range methods {
		s := found[m]
		if s == nil {
			t.Errorf("no span of the proxy (service %s) for %s of pod %s in Jaeger", service, m, name)
			continue
		}
		t.Logf("%s: %s", m, ancestry(spans, s))
		if s.OperationName != "runtime.v1.RuntimeService/"+m || s.tag("span.kind") != "server" {
			t.Errorf("%s: span %q kind %q, want runtime.v1.RuntimeService/%s, server", m, s.OperationName, s.tag("span.kind"), m)
		}
		if s.tag("podstep.step.name") != steps[m] || s.tag("rpc.grpc.status_code") != "0" || s.tag("podstep.cri.request_size") == "" {
			t.Errorf("%s: step %q code %q request_size %q, want step %s, code 0 and a size", m, s.tag("podstep.step.name"), s.tag("rpc.grpc.status_code"), s.tag("podstep.cri.request_size"), steps[m])
		}
		if m != "RunPodSandbox" && s.tag("k8s.container.name") != "hello" {
			t.Errorf("%s: k8s.container.name %q, want hello", m, s.tag("k8s.container.name"))
		}
		// The kubelet traces: the proxy's span is under its CRI client span.
		if pa := spans[s.parent()]; pa == nil || pa.service != "kubelet" || pa.OperationName != s.OperationName || pa.tag("span.kind") != "client" {
			t.Errorf("%s: parent %s, want the kubelet's client span %s", m, describe(pa), s.OperationName)
		}
		if e.rt.major < 2 {
			continue
		}
		if ch := childOf(spans, s, "containerd"); ch == nil || ch.OperationName != s.OperationName {
			t.Errorf("%s: no containerd span %s under the proxy's", m, s.OperationName)
		}
	}
	if s := found["RunPodSandbox"]; s != nil && ancestor(spans, s, "kubelet", "syncPod") == nil {
		t.Errorf("RunPodSandbox: no kubelet syncPod above the proxy's span: %s", ancestry(spans, s))
	}
	if e.rt.major < 2 {
		t.Logf("%s exports no spans (Debian's build has no tracing plugin): containerd's spans not checked", e.rt)
	}
}

// serviceSpans gets every trace with a span of service from Jaeger's query
// API, and their spans (of every service) by ID.
func serviceSpans(t *testing.T, query, service string) (map[string]*jaegerSpan, string) {
	t.Helper()
	resp, err := http.Get(query + "/api/traces?limit=500&lookback=1h&service=" + url.QueryEscape(service))
	if err != nil {
		t.Fatalf("jaeger query API: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	out := map[string]*jaegerSpan{}
	if resp.StatusCode != 200 {
		return out, string(b)
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("jaeger query API: %v\n%s", err, b)
	}
	for _, tr := range body.Data {
		for i := range tr.Spans {
			s := &tr.Spans[i]
			s.service = tr.Processes[s.ProcessID].ServiceName
			out[s.SpanID] = s
		}
	}
	return out, string(b)
}

// childOf is a span of service whose parent is s.
func childOf(spans map[string]*jaegerSpan, s *jaegerSpan, service string) *jaegerSpan {
	for _, c := range spans {
		if c.parent() == s.SpanID && c.service == service {
			return c
		}
	}
	return nil
}

// ancestor is the first span above s of this service and name.
func ancestor(spans map[string]*jaegerSpan, s *jaegerSpan, service, name string) *jaegerSpan {
	for p := spans[s.parent()]; p != nil; p = spans[p.parent()] {
		if p.service == service && p.OperationName == name {
			return p
		}
	}
	return nil
}

// ancestry is s, the spans above it and containerd's below, with their
// durations: "kubelet syncPod 1012.3ms → ...".
func ancestry(spans map[string]*jaegerSpan, s *jaegerSpan) string {
	var parts []string
	for p := s; p != nil; p = spans[p.parent()] {
		parts = append([]string{fmt.Sprintf("%s %s %.1fms", p.service, p.OperationName, float64(p.Duration)/1000)}, parts...)
	}
	if c := childOf(spans, s, "containerd"); c != nil {
		parts = append(parts, fmt.Sprintf("%s %s %.1fms", c.service, c.OperationName, float64(c.Duration)/1000))
	}
	return strings.Join(parts, " → ")
}
