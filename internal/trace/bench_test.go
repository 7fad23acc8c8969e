package trace

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/steps"
)

// BenchmarkTenCalls is the tracing work podstep does per 10 CRI calls in one
// step: the step's span, then per call the client span, its attributes and
// the traceparent in the call's metadata, batched as the exporter batches
// (the export itself runs on the batcher's goroutine). The bar (issue 14):
// at most 0.5 ms of podstep's own time per 10 CRI calls; hack/bench-trace.sh
// measures it end to end, against a real collector.
func BenchmarkTenCalls(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	run := newRun(context.Background(), tp.Tracer(scope), Pod{Namespace: "default", Name: "hello", UID: "u"})
	req := &runtimeapi.CreateContainerRequest{PodSandboxId: "0123456789abcdef", Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}
	start := cri.CallStart{Method: "CreateContainer", FullMethod: cri.FullMethod("CreateContainer"), Request: req, Size: 64}
	step := steps.Step{ID: 1, Stage: steps.StageContainers, Name: "create/app", Container: "app"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		step.Started = time.Now()
		run.Observe(steps.Event{Kind: steps.StepStarted, Step: step})
		for range 10 {
			_, end := run.StartCall(ctx, start)
			end(cri.Call{Method: start.Method, Start: time.Now()})
		}
		step.State = steps.Done
		run.Observe(steps.Event{Kind: steps.StepDone, Step: step})
	}
}
