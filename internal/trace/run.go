package trace

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/podstep/podstep/internal/steps"
)

// Span names where the kubelet v1.37.0 has its own (pkg/kubelet/kubelet.go).
const (
	// SpanRun is the root span of one podstep run.
	SpanRun = "podstep run"
	// SpanSyncPod covers the pod's creation: Kubelet.SyncPod's span.
	SpanSyncPod = "syncPod"
	// SpanSyncTerminatingPod covers the teardown: Kubelet.SyncTerminatingPod's span.
	SpanSyncTerminatingPod = "syncTerminatingPod"
)

// Pod names the pod a run creates, for the spans' attributes.
type Pod struct {
	Namespace, Name, UID string
}

// Run turns one engine's events into spans: subscribe Observe to the engine
// (eng.Subscribe(run.Observe)) and give the run to the CRI client as its
// tracer (client.SetTracer(run)), then End it. The engine delivers events
// one at a time and runs one step at a time; CRI calls may come from several
// goroutines within a step (teardown's parallel StopContainer), so a Run
// locks its state.
type Run struct {
	tracer oteltrace.Tracer
	pod    Pod

	mu    sync.Mutex
	root  oteltrace.Span
	phase oteltrace.Span // syncPod or syncTerminatingPod
	// phaseName is the phase span's name; stage is the running stage's
	// name, stageSpan its span, and stageEnd when its last step ended.
	phaseName string
	stage     steps.Stage
	stageSpan oteltrace.Span
	stageEnd  time.Time
	stepSpan  oteltrace.Span
	step      steps.Step
	failed    bool
	ctx       context.Context // the root span's
}

// StartRun starts the root span of a run of pod; attrs are added to it
// (the manifest, the runtime endpoint). Safe on a nil Exporter: it returns nil,
// and a nil Run does nothing.
func (x *Exporter) StartRun(ctx context.Context, pod Pod, attrs ...attribute.KeyValue) *Run {
	if x == nil {
		return nil
	}
	return newRun(ctx, x.tracer, pod, attrs...)
}

func newRun(ctx context.Context, tracer oteltrace.Tracer, pod Pod, attrs ...attribute.KeyValue) *Run {
	r := &Run{tracer: tracer, pod: pod}
	attrs = append(podAttrs(pod), attrs...)
	r.ctx, r.root = tracer.Start(ctx, SpanRun, oteltrace.WithAttributes(attrs...))
	return r
}

// podAttrs are the pod's attributes as the kubelet's syncPod span has them.
func podAttrs(p Pod) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("k8s.pod.uid", p.UID),
		attribute.String("k8s.pod", p.Namespace+"/"+p.Name),
		attribute.String("k8s.pod.name", p.Name),
		attribute.String("k8s.namespace.name", p.Namespace),
	}
}

// Context is a context holding the run's root span, for a caller's own spans.
func (r *Run) Context() context.Context { return r.ctx }

// TraceID is the run's trace ID, in hex.
func (r *Run) TraceID() string {
	if r == nil {
		return ""
	}
	return r.root.SpanContext().TraceID().String()
}

// Observe is the engine subscriber: StepStarted opens the step's span (and
// its stage's and phase's, when they change), StepDone closes it.
func (r *Run) Observe(ev steps.Event) {
	if r == nil {
		return
	}
	switch ev.Kind {
	case steps.StepStarted:
		r.stepStarted(ev.Step)
	case steps.StepDone:
		r.stepDone(ev.Step)
	}
}

func (r *Run) stepStarted(s steps.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := s.Started
	if start.IsZero() {
		start = time.Now()
	}
	phase := SpanSyncPod
	if s.Stage == steps.StageTeardown {
		phase = SpanSyncTerminatingPod
	}
	if r.phase == nil || r.phaseName != phase {
		r.endStage()
		r.endPhase()
		attrs := podAttrs(r.pod)
		if phase == SpanSyncPod {
			attrs = append(attrs, attribute.String("k8s.pod.update_type", "create"))
		}
		_, r.phase = r.tracer.Start(r.ctx, phase, oteltrace.WithTimestamp(start), oteltrace.WithAttributes(attrs...))
		r.phaseName = phase
	}
	if r.stageSpan == nil || r.stage != s.Stage {
		r.endStage()
		pctx := oteltrace.ContextWithSpan(r.ctx, r.phase)
		_, r.stageSpan = r.tracer.Start(pctx, string(s.Stage), oteltrace.WithTimestamp(start),
			oteltrace.WithAttributes(attribute.String("podstep.stage", string(s.Stage))))
		r.stage = s.Stage
	}
	attrs := []attribute.KeyValue{
		attribute.Int("podstep.step.id", s.ID),
		attribute.String("podstep.step.name", s.Name),
		attribute.String("podstep.stage", string(s.Stage)),
		attribute.String("podstep.step.mirrors", s.Mirrors),
	}
	if s.Container != "" {
		attrs = append(attrs, attribute.String("k8s.container.name", s.Container))
	}
	sctx := oteltrace.ContextWithSpan(r.ctx, r.stageSpan)
	_, r.stepSpan = r.tracer.Start(sctx, s.Name, oteltrace.WithTimestamp(start), oteltrace.WithAttributes(attrs...))
	r.step = s
}

func (r *Run) stepDone(s steps.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stepSpan == nil {
		return
	}
	end := s.Started.Add(s.Duration)
	if s.Started.IsZero() {
		end = time.Now()
	}
	r.stepSpan.SetAttributes(attribute.String("podstep.step.state", string(s.State)))
	if s.Result.Reason != "" {
		r.stepSpan.SetAttributes(attribute.String("podstep.step.reason", string(s.Result.Reason)))
	}
	if s.State == steps.Failed {
		// Masked by the engine (redactResult), as every frontend shows it.
		msg := s.Result.Message
		if msg == "" {
			msg = s.Result.Summary
		}
		if s.Result.Reason != "" {
			msg = s.Result.Reason + ": " + msg
		}
		r.stepSpan.SetStatus(codes.Error, msg)
		if s.Stage != steps.StageTeardown {
			r.failed = true
			r.stageSpan.SetStatus(codes.Error, s.Name+" failed")
			r.phase.SetStatus(codes.Error, s.Name+" failed")
		}
	}
	r.stepSpan.End(oteltrace.WithTimestamp(end))
	r.stepSpan = nil
	r.stageEnd = end
}

func (r *Run) endStage() {
	if r.stageSpan != nil {
		r.stageSpan.End(oteltrace.WithTimestamp(r.stageEnd))
		r.stageSpan = nil
	}
}

func (r *Run) endPhase() {
	if r.phase != nil {
		r.phase.End(oteltrace.WithTimestamp(r.stageEnd))
		r.phase = nil
	}
}

// End closes every open span, the root last, with the run's exit code.
func (r *Run) End(exitCode int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stepSpan != nil {
		r.stageEnd = time.Now()
		r.stepSpan.End(oteltrace.WithTimestamp(r.stageEnd))
		r.stepSpan = nil
	}
	r.endStage()
	r.endPhase()
	r.root.SetAttributes(attribute.Int("podstep.exit_code", exitCode))
	if exitCode != 0 {
		r.root.SetStatus(codes.Error, "exit code "+strconv.Itoa(exitCode))
	}
	r.root.End()
}
