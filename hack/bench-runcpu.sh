#!/usr/bin/env bash
# The CPU one `podstep run --auto -q --sim` costs (issue 23, the workshop room): on a 2-core
# machine, 30 runs at once stay within 2x of one run's wall time only if each run's CPU time is
# small next to its wall time. CPU time, unlike wall time, hardly depends on what else the
# machine runs, so it is the figure to compare builds by on a shared machine.
#   hack/bench-runcpu.sh [RUNS]      (default 15)
# Runs the pod RUNS times, one after another (one warm-up run first), each under
# `perf stat -e task-clock,page-faults` (the CPU time of podstep and all its threads, in ms, to
# the microsecond), and prints the medians of wall time, CPU time and page faults, and the load
# average. Needs perf (apt-get install linux-perf).
# Binary: $PODSTEP_BIN, else built. MANIFEST overrides the pod (default testdata/pods/hello.yaml).
set -euo pipefail

RUNS=${1:-15}
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
if ! command -v perf >/dev/null; then
	echo "bench-runcpu: needs perf (apt-get install linux-perf)" >&2
	exit 2
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
podstep_bin "$TMP"
POD=${MANIFEST:-testdata/pods/hello.yaml}

# one: a run; appends its wall ms to $TMP/wall, its CPU ms and page faults to $TMP/cpu, $TMP/pf.
one() {
	local start end
	start=$(date +%s%N)
	if ! perf stat -x, -e task-clock,page-faults -o "$TMP/stat" "$BIN" run --auto -q --sim -f "$POD" >"$TMP/out" 2>&1; then
		echo "bench-runcpu: podstep run failed:" >&2
		cat "$TMP/out" >&2
		exit 1
	fi
	end=$(date +%s%N)
	echo $(((end - start) / 1000000)) >>"$TMP/wall"
	awk -F, '$3 == "task-clock" { print $1 }' "$TMP/stat" >>"$TMP/cpu"
	awk -F, '$3 == "page-faults" { print $1 }' "$TMP/stat" >>"$TMP/pf"
}

one
rm -f "$TMP/wall" "$TMP/cpu" "$TMP/pf"
for _ in $(seq "$RUNS"); do one; done
printf 'podstep run --auto -q --sim -f %s, median of %d runs: wall %s ms; CPU %s ms; %s page faults; load %s\n' \
	"$POD" "$RUNS" "$(median 0 <"$TMP/wall")" "$(median 1 <"$TMP/cpu")" "$(median 0 <"$TMP/pf")" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
