# shellcheck shell=bash
# hack/lib/harness-tracing.sh: containerd 2's OTLP tracing (PODSTEP_OTLP_ENDPOINT): its config lines,
# environment, and the check that a running harness traces where asked.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

# PODSTEP_OTLP_ENDPOINT=http://127.0.0.1:PORT (an OTLP/HTTP collector's base URL, e.g. the one
# hack/jaeger-up.sh prints): containerd exports its spans there (service name "containerd"). Unset:
# its two tracing plugins (io.containerd.tracing.processor.v1.otlp, io.containerd.internal.v1.tracing)
# stay disabled, as before.
# - containerd 2 (v2.4) configures them only through the standard OTEL_* environment (their config
#   fields endpoint/protocol/insecure and sampling_ratio/service_name were removed in v2.4:
#   RELEASES.md, pkg/tracing/plugin/otlp.go), so it is started with that environment (spans
#   batched every 200 ms instead of 5 s, so that a test finds them soon after a run).
# - containerd 1.6: ignored. Upstream 1.6 has the plugins (config fields endpoint/protocol/insecure,
#   and its gRPC server spans), but Debian's 1.6.20~ds1 build leaves them out: its binary has no
#   io.containerd.tracing.processor plugin (`ctr plugins ls`), so it exports nothing.
OTLP_ENDPOINT=${PODSTEP_OTLP_ENDPOINT:-}
# tracing_init: checks PODSTEP_OTLP_ENDPOINT, and says that 1.6 ignores it.
tracing_init() {
	if [ -n "$OTLP_ENDPOINT" ]; then
		[[ $OTLP_ENDPOINT =~ ^https?://[^/?#]+(/[^?#]*)?$ ]] ||
			die "PODSTEP_OTLP_ENDPOINT=$OTLP_ENDPOINT: expected an OTLP/HTTP base URL such as http://127.0.0.1:14318"
	fi
	if [ "$RUNTIME" = 1.6 ] && [ -n "$OTLP_ENDPOINT" ]; then
		log "PODSTEP_OTLP_ENDPOINT=$OTLP_ENDPOINT: ignored for containerd 1.6 (Debian's build has no tracing plugin; see hack/README.md)"
	fi
}
tracing_on() { [ "$RUNTIME" = 2 ] && [ -n "$OTLP_ENDPOINT" ]; }
# tracing_disabled: the disabled_plugins lines of the tracing plugins, when tracing is off.
tracing_disabled() {
	tracing_on || printf '  "%s",\n' io.containerd.tracing.processor.v1.otlp io.containerd.internal.v1.tracing
	return 0
}
# tracing_env: the environment containerd 2 is started with (empty when tracing is off).
tracing_env() {
	tracing_on || return 0
	printf '%s\n' "OTEL_EXPORTER_OTLP_ENDPOINT=$OTLP_ENDPOINT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
		OTEL_SERVICE_NAME=containerd OTEL_TRACES_SAMPLER=parentbased_always_on OTEL_BSP_SCHEDULE_DELAY=200
}
# check_tracing PID: a running containerd 2 was started with the tracing asked for now; a harness
# reused with other tracing would silently export elsewhere, or not at all.
check_tracing() {
	[ "$RUNTIME" = 2 ] || return 0
	local have asked=
	tracing_on && asked=$OTLP_ENDPOINT
	have=$(tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^OTEL_EXPORTER_OTLP_ENDPOINT=//p')
	[ "$have" = "$asked" ] ||
		die "containerd (pid $1) exports traces to '${have:-nowhere}', but PODSTEP_OTLP_ENDPOINT asks for '${asked:-nowhere}'; stop it with hack/containerd-down.sh and the same variables"
	if [ -n "$asked" ]; then log "containerd exports its traces to $asked (OTLP/HTTP)"; fi
	return 0
}
