package session

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"

	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// Tracing is a run's OpenTelemetry export (--otlp-endpoint or the OTEL_*
// environment). Without an endpoint it is nil, and every method does nothing.
type Tracing struct {
	x   *trace.Exporter
	run *trace.Run
}

// OpenTracing resolves the tracing flags and environment and makes the
// exporter, before anything is sent: a bad endpoint, protocol or resource
// is bad usage (exit 2). It contacts no collector.
func OpenTracing(ctx context.Context, o trace.Options, podstep string) (*Tracing, error) {
	cfg, err := o.Resolve(nil)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	x, err := trace.Setup(ctx, cfg, podstep)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	if x == nil {
		return nil, nil
	}
	return &Tracing{x: x}, nil
}

// Start opens the run's root span, subscribes it to the engine's events and
// makes it the tracer of every CRI call from now on.
func (t *Tracing) Start(ctx context.Context, c *Conn, eng *steps.Engine) {
	if t == nil {
		return
	}
	p := eng.Pod()
	t.run = t.x.StartRun(ctx, trace.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
		attribute.String("podstep.manifest", eng.Bundle().File),
		attribute.String("podstep.runtime.endpoint", c.Runtime.Endpoint),
		attribute.Bool("podstep.runtime.simulated", c.Runtime.Simulated))
	eng.Subscribe(t.run.Observe)
	c.Client.SetTracer(t.run)
}

// Close ends the run's spans with the exit code err gives (Code) and
// flushes them, waiting at most the exporter's timeout. It says on stderr
// which trace was exported, or, when the collector could not be reached,
// one warning line; the exit code stands either way.
func (t *Tracing) Close(ctx context.Context, err error, stderr io.Writer) {
	if t == nil {
		return
	}
	if t.run == nil {
		// Nothing was traced: the run ended before the engine was made
		// (bad manifest, runtime unreachable).
		t.x.Shutdown(ctx, io.Discard)
		return
	}
	t.run.End(Code(err))
	if t.x.Shutdown(ctx, stderr) {
		fmt.Fprintf(stderr, "podstep: trace %s exported to %s\n", t.run.TraceID(), t.x.Config().URL)
	}
}
