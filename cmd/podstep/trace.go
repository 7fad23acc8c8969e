package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// tracing is a run's OpenTelemetry export (--otlp-endpoint or the OTEL_*
// environment). Without an endpoint it is nil, and every method does nothing.
type tracing struct {
	x   *trace.Exporter
	run *trace.Run
}

// openTracing resolves the tracing flags and environment and makes the
// exporter, before anything is sent: a bad endpoint, protocol or resource
// is bad usage (exit 2). It contacts no collector.
func openTracing(ctx context.Context, o trace.Options) (*tracing, error) {
	cfg, err := o.Resolve(nil)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	x, err := trace.Setup(ctx, cfg, version)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if x == nil {
		return nil, nil
	}
	return &tracing{x: x}, nil
}

// start opens the run's root span, subscribes it to the engine's events and
// makes it the tracer of every CRI call from now on.
func (t *tracing) start(ctx context.Context, c *conn, eng *steps.Engine) {
	if t == nil {
		return
	}
	p := eng.Pod()
	t.run = t.x.StartRun(ctx, trace.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
		attribute.String("podstep.manifest", eng.Bundle().File),
		attribute.String("podstep.runtime.endpoint", c.info.Endpoint),
		attribute.Bool("podstep.runtime.simulated", c.info.Simulated))
	eng.Subscribe(t.run.Observe)
	c.client.SetTracer(t.run)
}

// close ends the run's spans with the command's exit code and flushes them,
// waiting at most the exporter's timeout. It says on stderr which trace was
// exported, or, when the collector could not be reached, one warning line;
// the exit code stands either way.
func (t *tracing) close(ctx context.Context, err error, stderr io.Writer) {
	if t == nil {
		return
	}
	if t.run == nil {
		// Nothing was traced: the run ended before the engine was made
		// (bad manifest, runtime unreachable).
		t.x.Shutdown(ctx, io.Discard)
		return
	}
	t.run.End(codeOf(err))
	if t.x.Shutdown(ctx, stderr) {
		fmt.Fprintf(stderr, "podstep: trace %s exported to %s\n", t.run.TraceID(), t.x.Config().URL)
	}
}

// codeOf is the exit code err will give (exitCode, without printing).
func codeOf(err error) int {
	var (
		ee *exitError
		me *manifest.Error
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &me):
		return ExitUsage
	}
	return ExitUsage
}
