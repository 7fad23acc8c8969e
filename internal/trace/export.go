package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// maxBatch is how many ended spans are kept before they are exported in the
// background (the SDK's default batch size); a run of the hello pod makes ~50.
const maxBatch = 512

// scope is podstep's instrumentation scope (the kubelet's is
// "k8s.io/kubernetes/pkg/kubelet").
const scope = "github.com/podstep/podstep"

// Exporter sends spans to one OTLP collector, batched in the background.
type Exporter struct {
	cfg    Config
	tp     *sdktrace.TracerProvider
	tracer oteltrace.Tracer

	mu   sync.Mutex
	errs []error // what the exporter reported, for the one warning line
}

// Setup makes the exporter for cfg (from Options.Resolve; nil: tracing is
// off, and Setup returns nil). It contacts nothing: the first export, in the
// background, is where an unreachable collector shows. service is the
// service.version of the spans (podstep's version). OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override the resource, "podstep" is the default
// service.name; the exporters read the rest of the standard environment
// (OTEL_EXPORTER_OTLP_HEADERS, …) themselves.
//
// Setup replaces OpenTelemetry's global error handler and logger: export
// errors are collected for Shutdown's one warning line instead of being
// logged as they happen.
func Setup(ctx context.Context, cfg *Config, version string) (*Exporter, error) {
	return setup(ctx, cfg, version, func(exp sdktrace.SpanExporter) sdktrace.SpanProcessor {
		return newBatchAtEnd(exp, maxBatch)
	})
}

// serverBatchTimeout is how often a long-running command (the proxy)
// exports the spans ended since the last export.
const serverBatchTimeout = time.Second

// SetupServer is Setup for a command that runs until stopped (podstep
// proxy): spans go out in the background at least every second (the
// SDK's batch span processor), not only at the end.
func SetupServer(ctx context.Context, cfg *Config, version string) (*Exporter, error) {
	return setup(ctx, cfg, version, func(exp sdktrace.SpanExporter) sdktrace.SpanProcessor {
		return sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(serverBatchTimeout))
	})
}

func setup(ctx context.Context, cfg *Config, version string, proc func(sdktrace.SpanExporter) sdktrace.SpanProcessor) (*Exporter, error) {
	if cfg == nil {
		return nil, nil
	}
	x := &Exporter{cfg: *cfg}
	otel.SetLogger(logr.Discard())
	otel.SetErrorHandler(otel.ErrorHandlerFunc(x.note))

	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", defaultServiceName), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("$%s or $%s: %w", EnvServiceName, EnvResourceAttrs, err)
	}
	var exp sdktrace.SpanExporter
	switch cfg.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.URL), otlptracegrpc.WithTimeout(cfg.Timeout))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.URL), otlptracehttp.WithTimeout(cfg.Timeout))
	}
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", cfg.URL, err)
	}
	x.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSpanProcessor(proc(exp)))
	x.tracer = x.tp.Tracer(scope, oteltrace.WithInstrumentationVersion(version))
	return x, nil
}

// Tracer is the exporter's tracer, for a command that makes its own spans.
func (x *Exporter) Tracer() oteltrace.Tracer { return x.tracer }

// Config is what the exporter was made with.
func (x *Exporter) Config() Config { return x.cfg }

func (x *Exporter) note(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.errs = append(x.errs, err)
}

// Shutdown sends the spans not sent yet and stops the exporter, waiting at
// most the exporter's timeout. When spans could not be exported (during
// the run or now) it writes one warning line to w; the run's outcome does
// not change. It reports whether every span was exported. Safe on a nil
// Exporter.
func (x *Exporter) Shutdown(ctx context.Context, w io.Writer) (exported bool) {
	if x == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.cfg.Timeout)
	defer cancel()
	err := x.tp.Shutdown(ctx)
	x.mu.Lock()
	errs := append([]error{err}, x.errs...)
	x.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		_, _ = fmt.Fprintf(w, "podstep: warning: traces not exported to %s (%s, timeout %s): %s\n", x.cfg.URL, x.cfg.Protocol, x.cfg.Timeout, oneLine(firstErr(errs)))
		return false
	}
	return true
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// oneLine keeps a warning on one line.
func oneLine(err error) string {
	b := []byte(err.Error())
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
