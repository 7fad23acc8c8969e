#!/usr/bin/env bash
# Time the hello pod against a running harness containerd:
#   hack/bench-hello.sh [RUNS]        (default 5)
# Runs `podstep run --auto -o json -f testdata/pods/hello.yaml --grace-period 0` RUNS times
# and prints, per CRI method, the median duration of its calls (creation and teardown), and
# the medians of the summary's create_ms, cri_ms, wait_ms, overhead_ms and teardown_ms.
# Needs: the harness up (hack/containerd-up.sh), jq. Endpoint: $CONTAINER_RUNTIME_ENDPOINT, else
# the harness socket. Binary: $PODSTEP_BIN, else built into a temp dir.
set -euo pipefail

RUNS=${1:-5}
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
command -v jq >/dev/null 2>&1 || {
	echo "bench-hello: needs jq (apt-get install jq)" >&2
	exit 2
}
ENDPOINT=${CONTAINER_RUNTIME_ENDPOINT:-unix://${PODSTEP_HARNESS_DIR:-/var/lib/podstep-harness}/run/containerd.sock}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
podstep_bin "$TMP"
"$BIN" info -r "$ENDPOINT" >/dev/null || {
	echo "bench-hello: runtime at $ENDPOINT not ready (start it with hack/containerd-up.sh)" >&2
	exit 3
}

for i in $(seq "$RUNS"); do
	if ! "$BIN" run --auto -o json -f testdata/pods/hello.yaml -r "$ENDPOINT" --grace-period 0 \
		--root-dir "$TMP/root" --log-dir "$TMP/logs" >"$TMP/run$i.json" 2>"$TMP/run$i.err"; then
		cat "$TMP/run$i.err" >&2
		echo "bench-hello: run $i failed" >&2
		exit 1
	fi
done

echo "hello pod, $RUNS runs on $("$BIN" info -r "$ENDPOINT" | sed -n 's/^runtime: *//p')"
echo
printf '%-20s %-9s %8s %12s\n' "CRI method" "phase" "calls/run" "median ms"
jq -r 'select(.type=="step") | (if .stage=="teardown" then "teardown" else "create" end) as $ph | .calls[] | [.method, $ph] | @tsv' "$TMP"/run*.json |
	awk '!seen[$0]++' | while IFS=$'\t' read -r method phase; do
	n=$(jq -r --arg m "$method" --arg ph "$phase" 'select(.type=="step") | select((.stage=="teardown") == ($ph=="teardown")) | .calls[] | select(.method==$m) | .duration_ms' "$TMP"/run*.json | wc -l)
	med=$(jq -r --arg m "$method" --arg ph "$phase" 'select(.type=="step") | select((.stage=="teardown") == ($ph=="teardown")) | .calls[] | select(.method==$m) | .duration_ms' "$TMP"/run*.json | median 1 -)
	printf '%-20s %-9s %8s %12s\n' "$method" "$phase" "$(awk -v n="$n" -v r="$RUNS" 'BEGIN{printf "%g", n/r}')" "$med"
done
echo
printf '%-14s %12s   %s\n' "summary" "median ms" "all runs"
for k in create_ms cri_ms wait_ms overhead_ms teardown_ms; do
	all=$(jq -r "select(.type==\"summary\") | .timing.$k" "$TMP"/run*.json)
	printf '%-14s %12s   %s\n' "$k" "$(printf '%s\n' "$all" | median 1 -)" "$(printf '%s\n' "$all" | awk '{printf "%.1f ", $1}')"
done
