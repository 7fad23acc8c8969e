#!/usr/bin/env bash
# What OTLP export costs podstep (issue 14's bar: at most 0.5 ms of podstep's own time per 10 CRI
# calls):
#   hack/bench-trace.sh [RUNS]        (default 20 runs of each kind)
# Runs `podstep run --auto -o json -f testdata/pods/hello.yaml` RUNS times without tracing and
# RUNS times with --otlp-endpoint (interleaved, so both see the same machine), reads each run's
# summary (timing.overhead_ms: podstep's own time, the creation's wall time less the time in CRI
# calls and in deliberate waits; timing.calls: the CRI calls), and prints per kind the median of
# overhead_ms per 10 CRI calls, then the difference and the ratio of the medians.
#
# Runtime: $PODSTEP_ENDPOINT (a harness containerd: hack/containerd-up.sh), else the simulated one.
# Collector: $PODSTEP_OTLP_ENDPOINT (an OTLP/HTTP base URL), else a Jaeger of its own started with
# hack/jaeger-up.sh in a temp folder (ports: the PODSTEP_JAEGER_*_PORT defaults) and stopped at the
# end. $PODSTEP_OTLP_PROTOCOL=grpc exports over gRPC instead (then give the gRPC endpoint).
# Binary: $PODSTEP_BIN, else built into a temp dir.
set -euo pipefail

RUNS=${1:-20}
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || {
	echo "bench-trace: RUNS '$RUNS': expected a count > 0" >&2
	exit 2
}

TMP=$(mktemp -d /tmp/podstep-bench-trace.XXXXXX)
JAEGER_OURS=
cleanup() {
	if [ -n "$JAEGER_OURS" ]; then
		PODSTEP_JAEGER_DIR=$TMP/jaeger bash hack/jaeger-down.sh >/dev/null 2>&1 || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

podstep_bin "$TMP"
ENDPOINT=${PODSTEP_ENDPOINT:-}
if [ -n "$ENDPOINT" ]; then
	RT=(-r "$ENDPOINT")
else
	RT=(--sim)
fi
OTLP=${PODSTEP_OTLP_ENDPOINT:-}
if [ -z "$OTLP" ]; then
	out=$(PODSTEP_JAEGER_DIR=$TMP/jaeger bash hack/jaeger-up.sh) || {
		echo "$out" >&2
		exit 1
	}
	JAEGER_OURS=1
	OTLP=$(sed -n 's/^PODSTEP_OTLP_ENDPOINT=//p' <<<"$out" | tail -n 1)
	[ "${PODSTEP_OTLP_PROTOCOL:-}" != grpc ] || OTLP=$(sed -n 's/^PODSTEP_OTLP_GRPC_ENDPOINT=//p' <<<"$out" | tail -n 1)
fi
PROTO=${PODSTEP_OTLP_PROTOCOL:-http/protobuf}

# one KIND: one run; appends "overhead_ms calls" to $TMP/KIND.
one() {
	local kind=$1 extra=() line
	[ "$kind" = off ] || extra=(--otlp-endpoint "$OTLP" --otlp-protocol "$PROTO")
	line=$(env -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
		"$BIN" run --auto -o json -f testdata/pods/hello.yaml "${RT[@]}" --grace-period 0 \
		--root-dir "$TMP/root" --log-dir "$TMP/logs" "${extra[@]}" 2>"$TMP/stderr" | grep '"type":"summary"') || {
		cat "$TMP/stderr" >&2
		echo "bench-trace: run ($kind) failed" >&2
		exit 1
	}
	if [ "$kind" = on ] && ! grep -q '^podstep: trace [0-9a-f]* exported' "$TMP/stderr"; then
		cat "$TMP/stderr" >&2
		echo "bench-trace: the run with --otlp-endpoint $OTLP did not export its trace" >&2
		exit 1
	fi
	grep -o '"timing":{[^}]*}' <<<"$line" | sed -n 's/.*"overhead_ms":\([0-9.e+-]*\).*"calls":\([0-9]*\).*/\1 \2/p' >>"$TMP/$kind"
}

echo "bench-trace: $RUNS runs each of podstep run --auto -f testdata/pods/hello.yaml ${RT[*]}, without and with --otlp-endpoint $OTLP ($PROTO)"
one off # warm-up (page cache, image present): not counted
rm -f "$TMP/off"
for _ in $(seq "$RUNS"); do
	one off
	one on
done

# median of overhead_ms * 10 / calls
median10() { awk '{ printf "%.4f\n", $1 * 10 / $2 }' "$1" | median 4; }
calls() { awk '{ print $2 }' "$1" | sort -g | uniq | paste -sd, -; }
off=$(median10 "$TMP/off")
on=$(median10 "$TMP/on")
printf 'podstep own time per 10 CRI calls (median of %d):  without tracing %.3f ms   with OTLP export %.3f ms\n' "$RUNS" "$off" "$on"
printf 'CRI calls per run: without %s, with %s\n' "$(calls "$TMP/off")" "$(calls "$TMP/on")"
awk -v a="$off" -v b="$on" 'BEGIN { printf "OTLP export adds %.3f ms per 10 CRI calls (ratio %.2f); bar: <= 0.5 ms\n", b - a, (a > 0 ? b / a : 0) }'
