package trace

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// traced runs file on the simulated runtime with a Run recording into an
// in-memory span recorder (the SDK's own), creation then teardown, and
// returns the ended spans and the client's calls.
func traced(t *testing.T, file string) ([]sdktrace.ReadOnlySpan, []cri.Call) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	calls := runFile(t, file, tp, true)
	return rec.Ended(), calls
}

// runFile runs file on the simulated runtime, creation then teardown, with
// a Run on tp when traced, and returns the client's calls.
func runFile(t testing.TB, file string, tp *sdktrace.TracerProvider, traced bool) []cri.Call {
	t.Helper()
	r := stepstest.New(t, file, func(o *steps.Options) { o.MaxRestarts, o.BackoffScale, o.Settle = 0, 0, 20*time.Millisecond })
	c, eng := r.Client, r.Engine
	var run *Run
	if traced {
		p := eng.Pod()
		run = newRun(context.Background(), tp.Tracer(scope), Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)})
		eng.Subscribe(run.Observe)
		c.SetTracer(run)
	}
	stepstest.Through(t, eng)
	run.End(0)
	return c.Calls()
}

// TestRunSpanTree checks the tree a run makes: the root; syncPod and
// syncTerminatingPod under it; stage spans under those, in the stages'
// order; step spans under their stage; one client span per CRI call under
// the step that sent it, named as the kubelet's CRI client names its spans.
func TestRunSpanTree(t *testing.T) {
	for _, file := range []string{"hello.yaml", "init.yaml"} {
		t.Run(file, func(t *testing.T) {
			spans, calls := traced(t, filepath.Join("..", "..", "testdata", "pods", file))
			byID := map[oteltrace.SpanID]sdktrace.ReadOnlySpan{}
			for _, s := range spans {
				byID[s.SpanContext().SpanID()] = s
			}
			parent := func(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan { return byID[s.Parent().SpanID()] }
			var roots, phases, stages, stepSpans, callSpans []sdktrace.ReadOnlySpan
			for _, s := range spans {
				if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
					t.Errorf("span %s is in another trace", s.Name())
				}
				switch {
				case !s.Parent().IsValid():
					roots = append(roots, s)
				case s.SpanKind() == oteltrace.SpanKindClient:
					callSpans = append(callSpans, s)
				case s.Name() == SpanSyncPod || s.Name() == SpanSyncTerminatingPod:
					phases = append(phases, s)
				case attr(s, "podstep.step.name") != "":
					stepSpans = append(stepSpans, s)
				default:
					stages = append(stages, s)
				}
			}
			if len(roots) != 1 || roots[0].Name() != SpanRun {
				t.Fatalf("roots = %v, want one %q", names(roots), SpanRun)
			}
			if got := names(phases); got != SpanSyncPod+" "+SpanSyncTerminatingPod {
				t.Errorf("phase spans = %q, want %q", got, SpanSyncPod+" "+SpanSyncTerminatingPod)
			}
			for _, s := range phases {
				if parent(s) != roots[0] {
					t.Errorf("%s: parent is not the root", s.Name())
				}
			}
			if attr(phases[0], "k8s.pod.name") == "" || attr(phases[0], "k8s.pod.uid") == "" {
				t.Errorf("syncPod lacks the kubelet's pod attributes: %v", phases[0].Attributes())
			}
			for _, s := range stages {
				p := parent(s)
				want := SpanSyncPod
				if s.Name() == string(steps.StageTeardown) {
					want = SpanSyncTerminatingPod
				}
				if p == nil || p.Name() != want {
					t.Errorf("stage %s: parent %v, want %s", s.Name(), nameOf(p), want)
				}
			}
			for _, s := range stepSpans {
				p := parent(s)
				if p == nil || p.Name() != attr(s, "podstep.stage") {
					t.Errorf("step %s: parent %v, want its stage %s", s.Name(), nameOf(p), attr(s, "podstep.stage"))
				}
			}
			if len(callSpans) != len(calls) {
				t.Errorf("%d CRI call spans for %d calls", len(callSpans), len(calls))
			}
			methods := map[string]int{}
			for _, s := range callSpans {
				p := parent(s)
				if p == nil || attr(p, "podstep.step.name") == "" {
					t.Errorf("call %s: parent %v is not a step", s.Name(), nameOf(p))
				}
				m := attr(s, "rpc.method")
				methods[m]++
				if want := strings.TrimPrefix(cri.FullMethod(m), "/"); s.Name() != want {
					t.Errorf("call span %q, want %q", s.Name(), want)
				}
				for _, k := range []string{"rpc.system", "rpc.service", "rpc.grpc.status_code", "podstep.cri.request_size", "k8s.pod.name"} {
					if attr(s, k) == "" {
						t.Errorf("call %s lacks %s", s.Name(), k)
					}
				}
				if m == "CreateContainer" && (attr(s, "k8s.container.name") == "" || attr(s, "cri.pod_sandbox_id") == "") {
					t.Errorf("CreateContainer span lacks the container or sandbox: %v", s.Attributes())
				}
				if s.StartTime().Before(p.StartTime()) || s.EndTime().After(p.EndTime()) {
					t.Errorf("call %s [%s, %s] is not within its step %s [%s, %s]", s.Name(), s.StartTime(), s.EndTime(), p.Name(), p.StartTime(), p.EndTime())
				}
			}
			for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopPodSandbox", "RemovePodSandbox"} {
				if methods[m] == 0 {
					t.Errorf("no %s call span (got %v)", m, methods)
				}
			}
		})
	}
}

// TestRunNoSecrets: no Secret value of the manifest is in any span's name,
// attributes, status or events, even when the runtime's error quotes one
// (the failed step's and call's status show it masked).
func TestRunNoSecrets(t *testing.T) {
	for _, tc := range []struct {
		file, failed string
	}{
		{filepath.Join("..", "..", "testdata", "pods", "secrets-expansion.yaml"), ""},
		{filepath.Join("testdata", "secret-error.yaml"), "postgres://u:"},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			spans, _ := traced(t, tc.file)
			var all strings.Builder
			for _, s := range spans {
				fmt.Fprintln(&all, s.Name(), s.Attributes(), s.Status(), s.Events())
			}
			if !strings.Contains(all.String(), "k8s.pod.name") || !strings.Contains(all.String(), tc.failed) {
				t.Fatalf("the spans do not name the pod or lack the error %q:\n%s", tc.failed, all.String())
			}
			for _, secret := range []string{"Pg-Pa55word-Xk39q", "tok-7Hq2-Lm9W-pp31", "Unused-Secret-Zr71"} {
				if strings.Contains(all.String(), secret) {
					t.Errorf("a span holds the secret %q", secret)
				}
			}
		})
	}
}

// TestStartCallPropagates: the context a call is sent with carries the W3C
// traceparent of the call's own span, sampled.
func TestStartCallPropagates(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	run := newRun(context.Background(), tp.Tracer(scope), Pod{Namespace: "default", Name: "p"})
	ctx, end := run.StartCall(context.Background(), cri.CallStart{Method: "Version", FullMethod: cri.FullMethod("Version")})
	end(cri.Call{Method: "Version", Start: time.Now()})
	md, _ := metadata.FromOutgoingContext(ctx)
	got := md.Get("traceparent")
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	sc := spans[0].SpanContext()
	want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
	if len(got) != 1 || got[0] != want {
		t.Errorf("traceparent = %q, want [%s]", got, want)
	}
	if spans[0].Name() != "runtime.v1.RuntimeService/Version" || spans[0].Parent().SpanID() != run.root.SpanContext().SpanID() {
		t.Errorf("span %q with parent %s, want runtime.v1.RuntimeService/Version under the root", spans[0].Name(), spans[0].Parent().SpanID())
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func names(spans []sdktrace.ReadOnlySpan) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return strings.Join(out, " ")
}

func nameOf(s sdktrace.ReadOnlySpan) string {
	if s == nil {
		return "<none>"
	}
	return s.Name()
}
