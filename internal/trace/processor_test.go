package trace

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestBatchAtEnd: the processor exports nothing while spans end, a full
// batch in the background, the rest at Shutdown; every span once.
func TestBatchAtEnd(t *testing.T) {
	for _, tc := range []struct {
		spans, max, beforeFlush int
	}{
		{spans: 3, max: 10, beforeFlush: 0},
		{spans: 25, max: 10, beforeFlush: 20},
	} {
		exp := tracetest.NewInMemoryExporter()
		p := newBatchAtEnd(exp, tc.max)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
		tr := tp.Tracer("test")
		for range tc.spans {
			_, s := tr.Start(context.Background(), "s")
			s.End()
		}
		p.pending.Wait()
		if got := len(exp.GetSpans()); got != tc.beforeFlush {
			t.Errorf("%d spans, batches of %d: %d exported before Shutdown, want %d", tc.spans, tc.max, got, tc.beforeFlush)
		}
		// Shutdown resets the in-memory exporter: count through ForceFlush.
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := len(exp.GetSpans()); got != tc.spans {
			t.Errorf("%d spans: %d exported after the flush", tc.spans, got)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
