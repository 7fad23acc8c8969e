//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

// The tracing tests export to a real Jaeger v2 (hack/jaeger-up.sh), which
// hack/test.sh starts before the harness and names in:
//
//	PODSTEP_OTLP_ENDPOINT       its OTLP/HTTP receiver's base URL (containerd 2.x exports there too)
//	PODSTEP_OTLP_GRPC_ENDPOINT  its OTLP/gRPC receiver
//	PODSTEP_JAEGER_QUERY        its query API's base URL

// jaegerEnv returns the Jaeger endpoints, or skips loudly (fails under CI=true).
func jaegerEnv(t *testing.T) (otlpHTTP, otlpGRPC, query string) {
	t.Helper()
	v := testenv.Require(t, "TRACING", "hack/test.sh starts Jaeger (hack/jaeger-up.sh) and sets them",
		"PODSTEP_OTLP_ENDPOINT", "PODSTEP_OTLP_GRPC_ENDPOINT", "PODSTEP_JAEGER_QUERY")
	return v[0], v[1], v[2]
}

// jaegerSpan is a span as Jaeger's query API (/api/traces) gives it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	service   string
}

type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
		Tags        []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"processes"`
}

func (s *jaegerSpan) tag(key string) string {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

func (s *jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// getTrace fetches a trace by ID; ok is false while Jaeger has none.
func getTrace(t *testing.T, query, id string) (tr jaegerTrace, raw string, ok bool) {
	t.Helper()
	resp, err := http.Get(query + "/api/traces/" + url.PathEscape(id))
	if err != nil {
		t.Fatalf("jaeger query API: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	var b strings.Builder
	if resp.StatusCode == http.StatusNotFound {
		return tr, "", false
	}
	if err := json.NewDecoder(io.TeeReader(resp.Body, &b)).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("jaeger query API %s: status %d, %v\n%s", resp.Request.URL, resp.StatusCode, err, b.String())
	}
	if len(body.Data) != 1 {
		return tr, b.String(), false
	}
	tr = body.Data[0]
	for i := range tr.Spans {
		tr.Spans[i].service = tr.Processes[tr.Spans[i].ProcessID].ServiceName
	}
	return tr, b.String(), true
}

// traceIDLine is what podstep says on stderr after exporting.
var traceIDLine = regexp.MustCompile(`(?m)^podstep: trace ([0-9a-f]{32}) exported to (\S+)$`)

// TestTraceJaeger runs the hello pod with tracing to a real Jaeger, over
// OTLP/HTTP (--otlp-endpoint) and OTLP/gRPC (the OTEL_* environment), and
// reads the trace back from Jaeger's query API: the root span; syncPod and
// syncTerminatingPod under it; a span per stage, and per step under its
// stage, for every step podstep printed; under each step, one client span
// per CRI call it printed, in order. On containerd 2.x (the harness exports
// its spans to the same Jaeger) containerd's own spans are in the trace,
// each under one of podstep's CRI call spans, and RunPodSandbox,
// CreateContainer and StartContainer each have one of containerd's server
// spans as a child, and RunPodSandbox's the CRI plugin's own cri.sandbox.run.
// Debian's containerd 1.6 exports none (its build has no tracing plugin; the
// harness leaves PODSTEP_OTLP_ENDPOINT aside for it): the test says so,
// checks that none of containerd's spans are there, and checks podstep's tree.
func TestTraceJaeger(t *testing.T) {
	e := setup(t)
	otlpHTTP, otlpGRPC, query := jaegerEnv(t)
	for _, tc := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"http-flag", []string{"--otlp-endpoint", otlpHTTP}, nil},
		{"grpc-env", nil, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlpGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := fmt.Sprintf("it-%d", time.Now().UnixNano())
			te := *e
			te.extraEnv = append([]string{"OTEL_SERVICE_NAME=podstep-test", "OTEL_RESOURCE_ATTRIBUTES=podstep.test.run=" + run}, tc.env...)
			r := te.mustRun(t, newDirs(t), e.pod("hello"), tc.flags...)
			m := traceIDLine.FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("no 'podstep: trace ID exported to URL' line on stderr\n%s", r)
			}
			if strings.Contains(r.stderr, "warning") {
				t.Errorf("a warning on stderr\n%s", r)
			}
			id := m[1]

			// podstep's spans reach Jaeger as podstep exits, containerd's in
			// batches (the harness: every 200 ms), a child often before its
			// parent, and Jaeger stores them in batches of its own. Poll until the
			// trace is whole: podstep's root there, and no span's parent missing.
			var tr jaegerTrace
			var raw string
			deadline := time.Now().Add(20 * time.Second)
			for {
				var ok bool
				tr, raw, ok = getTrace(t, query, id)
				if ok && complete(tr) && (e.rt.major < 2 || containerdSpans(tr) > 0 && containerdUnder(tr, "RunPodSandbox", "CreateContainer", "StartContainer") == "") {
					break
				}
				if time.Now().After(deadline) {
					if !ok {
						t.Fatalf("trace %s not in Jaeger (%s) after 20 s", id, query)
					}
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
			t.Logf("trace %s: %d spans (%d of containerd):\n%s", id, len(tr.Spans), containerdSpans(tr), spanTree(tr))
			assertPodstepTree(t, tr, r, run)
			if strings.Contains(raw, os.Getenv("PODSTEP_REGISTRY_PASSWORD")) && os.Getenv("PODSTEP_REGISTRY_PASSWORD") != "" {
				t.Errorf("the trace holds the registry password")
			}

			if e.rt.major < 2 {
				if n := containerdSpans(tr); n != 0 {
					t.Errorf("%s: %d containerd spans; the harness exports none for 1.6", e.rt, n)
				}
				t.Logf("%s exports no spans (Debian's build has no tracing plugin, and its CRI plugin makes no spans of its own): podstep's tree checked only", e.rt)
				return
			}
			if msg := containerdUnder(tr, "RunPodSandbox", "CreateContainer", "StartContainer"); msg != "" {
				t.Error(msg)
			}
			byID := spansByID(tr)
			// containerd 2.x also traces inside its CRI plugin: RunPodSandbox's
			// server span has the CRI plugin's own span under it
			// (internal/cri/server/sandbox_run.go: tracing.Name("cri", "sandbox", "run")).
			inner := false
			for _, s := range tr.Spans {
				if p := byID[s.parent()]; s.OperationName == "cri.sandbox.run" && p != nil && p.service == "containerd" && p.OperationName == "runtime.v1.RuntimeService/RunPodSandbox" {
					inner = true
				}
			}
			if !inner {
				t.Errorf("no containerd span cri.sandbox.run under its RunPodSandbox server span")
			}
			for _, s := range tr.Spans {
				if s.service != "containerd" {
					continue
				}
				// Walk up to the first span that is not containerd's: it must be a CRI call span of podstep.
				p := byID[s.parent()]
				for p != nil && p.service == "containerd" {
					p = byID[p.parent()]
				}
				if p == nil || p.tag("span.kind") != "client" || p.tag("rpc.method") == "" {
					t.Errorf("containerd span %q is not under one of podstep's CRI call spans (ancestor %v)", s.OperationName, describe(p))
				}
			}
		})
	}
}

// complete: the trace has podstep's root span, and every span's parent.
func complete(tr jaegerTrace) bool {
	byID := spansByID(tr)
	root := false
	for _, s := range tr.Spans {
		if p := s.parent(); p == "" {
			root = root || s.OperationName == "podstep run"
		} else if byID[p] == nil {
			return false
		}
	}
	return root
}

func spansByID(tr jaegerTrace) map[string]*jaegerSpan {
	m := map[string]*jaegerSpan{}
	for i := range tr.Spans {
		m[tr.Spans[i].SpanID] = &tr.Spans[i]
	}
	return m
}

func containerdSpans(tr jaegerTrace) int {
	n := 0
	for _, s := range tr.Spans {
		if s.service == "containerd" {
			n++
		}
	}
	return n
}

// containerdUnder checks that each of podstep's CRI call spans of these
// methods has a containerd server span of the same gRPC method as a child;
// "" when all do.
func containerdUnder(tr jaegerTrace, methods ...string) string {
	byID := spansByID(tr)
	has := map[string]bool{}
	for _, s := range tr.Spans {
		if s.service != "containerd" {
			continue
		}
		if p := byID[s.parent()]; p != nil && p.service != "containerd" && p.tag("span.kind") == "client" && s.OperationName == p.OperationName {
			has[p.SpanID] = true
		}
	}
	var missing []string
	for _, s := range tr.Spans {
		for _, m := range methods {
			if s.service != "containerd" && s.tag("rpc.method") == m && !has[s.SpanID] {
				missing = append(missing, m)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no containerd server span under podstep's %s span(s)", strings.Join(missing, ", "))
	}
	return ""
}

func describe(s *jaegerSpan) string {
	if s == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s %q", s.service, s.OperationName)
}

// assertPodstepTree checks podstep's own spans against the run's JSON output.
func assertPodstepTree(t *testing.T, tr jaegerTrace, r *result, run string) {
	t.Helper()
	byID := spansByID(tr)
	var root *jaegerSpan
	phase := map[string]*jaegerSpan{}
	stepSpan := map[string]*jaegerSpan{} // by step id
	calls := map[string][]*jaegerSpan{}  // by parent span id
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.service == "containerd" {
			continue
		}
		if s.service != "podstep-test" {
			t.Errorf("span %q of service %q, want podstep-test (OTEL_SERVICE_NAME)", s.OperationName, s.service)
		}
		switch {
		case s.parent() == "":
			if root != nil {
				t.Errorf("two root spans: %q and %q", root.OperationName, s.OperationName)
			}
			root = s
		case s.OperationName == "syncPod" || s.OperationName == "syncTerminatingPod":
			phase[s.OperationName] = s
		case s.tag("podstep.step.id") != "":
			stepSpan[s.tag("podstep.step.id")] = s
		case s.tag("span.kind") == "client":
			calls[s.parent()] = append(calls[s.parent()], s)
		}
	}
	if root == nil || root.OperationName != "podstep run" {
		t.Fatalf("no root span \"podstep run\" (got %v)", describe(root))
	}
	if root.tag("k8s.pod.name") != "hello" || root.tag("podstep.exit_code") != "0" {
		t.Errorf("root span: k8s.pod.name %q exit_code %q, want hello and 0", root.tag("k8s.pod.name"), root.tag("podstep.exit_code"))
	}
	found := false
	for _, p := range tr.Processes {
		for _, kv := range p.Tags {
			if kv.Key == "podstep.test.run" && fmt.Sprint(kv.Value) == run {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no process tag podstep.test.run=%s (OTEL_RESOURCE_ATTRIBUTES)", run)
	}
	for _, name := range []string{"syncPod", "syncTerminatingPod"} {
		if p := phase[name]; p == nil || p.parent() != root.SpanID {
			t.Errorf("%s: missing or not under the root (%v)", name, describe(p))
		}
	}
	if len(r.steps) == 0 {
		t.Fatalf("no steps in the output\n%s", r)
	}
	for _, st := range r.steps {
		s := stepSpan[fmt.Sprint(st.ID)]
		if s == nil {
			t.Errorf("step %d %s: no span", st.ID, st.Name)
			continue
		}
		if s.OperationName != st.Name {
			t.Errorf("step %d: span %q, want %q", st.ID, s.OperationName, st.Name)
		}
		stage := byID[s.parent()]
		if stage == nil || stage.OperationName != st.Stage {
			t.Errorf("step %s: parent %v, want its stage %q", st.Name, describe(stage), st.Stage)
			continue
		}
		want := "syncPod"
		if st.Stage == "teardown" {
			want = "syncTerminatingPod"
		}
		if p := byID[stage.parent()]; p == nil || p.OperationName != want {
			t.Errorf("stage %s: parent %v, want %s", st.Stage, describe(p), want)
		}
		var got, wantCalls []string
		cs := calls[s.SpanID]
		sort.Slice(cs, func(i, j int) bool { return cs[i].StartTime < cs[j].StartTime })
		for _, c := range cs {
			got = append(got, c.tag("rpc.method"))
			if c.OperationName != "runtime.v1.RuntimeService/"+c.tag("rpc.method") && c.OperationName != "runtime.v1.ImageService/"+c.tag("rpc.method") {
				t.Errorf("CRI call span %q for method %q", c.OperationName, c.tag("rpc.method"))
			}
			if c.tag("rpc.grpc.status_code") == "" || c.tag("podstep.cri.request_size") == "" || c.tag("k8s.pod.name") != "hello" {
				t.Errorf("CRI call span %q lacks status code, request size or pod: %+v", c.OperationName, c.Tags)
			}
		}
		for _, c := range st.Calls {
			wantCalls = append(wantCalls, c.Method)
		}
		if st.Stage == "teardown" {
			// Teardown's StopContainer calls run in parallel: compare as sets.
			sort.Strings(got)
			sort.Strings(wantCalls)
		}
		if strings.Join(got, " ") != strings.Join(wantCalls, " ") {
			t.Errorf("step %s: CRI call spans %v, want the calls it made %v", st.Name, got, wantCalls)
		}
	}
}

// TestTraceDeadCollector: a collector that is not there changes nothing but
// one warning line on stderr: the pod runs, the exit code and the output are
// those of a run without tracing, and nothing is left behind.
func TestTraceDeadCollector(t *testing.T) {
	e := setup(t)
	// A loopback port nobody listens on: bound, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"http", nil},
		{"grpc", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_TIMEOUT=2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := *e
			te.extraEnv = tc.env
			start := time.Now()
			r := te.mustRun(t, newDirs(t), e.pod("hello"), "--otlp-endpoint", dead)
			t.Logf("run with a dead %s collector: %s", tc.name, time.Since(start).Round(time.Millisecond))
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "podstep: warning: traces not exported to "+dead) {
				t.Errorf("stderr: want exactly one warning line about %s\n%s", dead, r)
			}
			if r.summary.Outcome != "running" || r.code != 0 {
				t.Errorf("outcome %q exit %d, want running and 0", r.summary.Outcome, r.code)
			}
		})
	}
}

// spanTree draws a trace as an indented tree, children in start order:
// "name  (service, duration)".
func spanTree(tr jaegerTrace) string {
	children := map[string][]*jaegerSpan{}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		children[s.parent()] = append(children[s.parent()], s)
	}
	var b strings.Builder
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		cs := children[id]
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].StartTime < cs[j].StartTime })
		for _, s := range cs {
			fmt.Fprintf(&b, "%s%s  (%s, %.1f ms)\n", strings.Repeat("  ", depth), s.OperationName, s.service, float64(s.Duration)/1000)
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	return b.String()
}
