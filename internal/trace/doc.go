// Package trace exports a podstep run as OpenTelemetry spans over OTLP.
//
// The spans follow the run as the kubelet's own tracing would show it (kubelet
// v1.37.0): a root span for the run; under it "syncPod" for the pod's creation
// (the kubelet's Kubelet.SyncPod span, pkg/kubelet/kubelet.go) and
// "syncTerminatingPod" for its teardown (Kubelet.SyncTerminatingPod); one span per
// stage and per step; and a client span per CRI call named as the kubelet's CRI
// client names them ("runtime.v1.RuntimeService/RunPodSandbox": the otelgrpc
// stats handler of k8s.io/cri-client's remote_runtime.go and remote_image.go).
//
// Each CRI call carries its span's W3C trace context (traceparent) in its gRPC
// metadata, so a runtime that traces (containerd 2.x with its OTLP tracing
// plugin) nests its own spans under podstep's CRI call spans.
//
// The engine (internal/steps) and the CRI client (internal/cri) do not import
// OpenTelemetry: a Run subscribes to the engine's events and is the client's
// cri.Tracer. With no endpoint configured, Setup returns nil and nothing is
// traced: no exporter, no hook, no cost.
//
// Exporting never slows or breaks a run: ended spans are kept in memory (a
// batch of 512 goes out in the background) and sent at the end, where
// Shutdown waits at most the exporter's timeout
// (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default), and a collector that could not
// be reached is one warning line, never a changed exit code. Span attributes hold
// only what the redactor left: redacted requests, results and errors.
package trace
