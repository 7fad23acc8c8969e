#!/usr/bin/env bash
# podstep's own time, the bars of `podstep bench` (issue 14):
#   hack/bench-overhead.sh [RUNS]                      (default 5)
#   PODSTEP_ENDPOINT=unix:///…/containerd.sock hack/bench-overhead.sh [RUNS]
# - On the simulated runtime, RUNS times `podstep bench --scale 1,16 -n 64 --warmup 4`:
#   podstep's own time per pod (median of the pods: wall less CRI calls less deliberate waits)
#   at K=1 and at K=16 pods at once, and the ratio (bar: <= 2x); and podstep's CPU per pod (bench
#   runs the simulated runtime in a process of its own); with the pods' dirs on disk, then on
#   tmpfs (/dev/shm). And where the own time goes, per pod (the median over the pods): the own
#   time of the steps that make, write or remove the pod's files (dirs; run-sandbox: the log dir;
#   create: etc-hosts and the termination-message file; remove-dirs), added, and the rest of the
#   own time (the steps that touch no file, and the time between steps), at K=1 and K=16.
# - With PODSTEP_ENDPOINT, RUNS times `podstep bench -n 20 --grace-period 0` of the hello pod on
#   that runtime: podstep's own time per pod against the CRI floor (bar: <= 5%).
# Prints the median over the RUNS of each figure, and each run's. It does not judge them.
# Needs jq (installed with apt-get when missing). Binary: $PODSTEP_BIN, else built.
set -euo pipefail

RUNS=${1:-5}
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
if ! command -v jq >/dev/null 2>&1; then
	echo "bench-overhead: installing jq" >&2
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
podstep_bin "$TMP"
POD=testdata/pods/hello.yaml

# DIRS is where the pods' root and log dirs go (set before each part).
DIRS=$TMP

# bench OUT ARGS...: one bench into OUT (JSON), with its root and log dirs under $DIRS.
bench() {
	local out=$1
	shift
	"$BIN" bench -f "$POD" -o json --root-dir "$DIRS/root" --log-dir "$DIRS/logs" "$@" >"$out" 2>"$TMP/stderr" || {
		echo "bench-overhead: podstep bench $* failed:" >&2
		cat "$TMP/stderr" >&2
		exit 1
	}
}

# sim LABEL ARGS...: RUNS benches --scale 1,16 -n 64 --warmup 4 with ARGS; prints per run and
# the medians of podstep's own time per pod at K=1 and K=16, their ratio, and the CPU per pod.
sim() {
	local label=$1
	shift
	echo "$label, $RUNS runs of: podstep bench $* --scale 1,16 -n 64 --warmup 4"
	: >"$TMP/k1" && : >"$TMP/k16" && : >"$TMP/ratio" && : >"$TMP/cpu1" && : >"$TMP/cpu16" && : >"$TMP/cpuratio"
	: >"$TMP/files1" && : >"$TMP/files16" && : >"$TMP/rest1" && : >"$TMP/rest16" && : >"$TMP/restratio"
	for i in $(seq "$RUNS"); do
		bench "$TMP/sim.json" "$@" --scale 1,16 -n 64 --warmup 4
		k1=$(jq '.levels[] | select(.concurrency == 1) | .own.p50_ms' "$TMP/sim.json")
		k16=$(jq '.levels[] | select(.concurrency == 16) | .own.p50_ms' "$TMP/sim.json")
		c1=$(jq '.levels[] | select(.concurrency == 1) | .cpu_per_pod_ms' "$TMP/sim.json")
		c16=$(jq '.levels[] | select(.concurrency == 16) | .cpu_per_pod_ms' "$TMP/sim.json")
		ratio=$(awk -v a="$k1" -v b="$k16" 'BEGIN { printf "%.3f", b / a }')
		cratio=$(awk -v a="$c1" -v b="$c16" 'BEGIN { printf "%.3f", b / a }')
		echo "  run $i: own p50 K=1 ${k1} ms, K=16 ${k16} ms (${ratio}x); CPU per pod K=1 ${c1} ms, K=16 ${c16} ms (${cratio}x)"
		echo "$k1" >>"$TMP/k1" && echo "$k16" >>"$TMP/k16" && echo "$ratio" >>"$TMP/ratio"
		echo "$c1" >>"$TMP/cpu1" && echo "$c16" >>"$TMP/cpu16" && echo "$cratio" >>"$TMP/cpuratio"
		# own_split K: per pod, the own time of the steps that touch the pod's files, added, and the rest
		# of the own time; prints the medians over the pods of each ("n/a n/a" without own_steps).
		own_split() { jq -r --argjson k "$1" -f hack/bench-overhead-split.jq "$TMP/sim.json"; }
		read -r f1 r1 < <(own_split 1) && read -r f16 r16 < <(own_split 16)
		rratio=$(awk -v a="$r1" -v b="$r16" 'BEGIN { if (a + 0 > 0) printf "%.3f", b / a; else print "n/a" }')
		[ "$f1" = n/a ] || echo "         file steps K=1 ${f1} ms, K=16 ${f16} ms; the rest K=1 ${r1} ms, K=16 ${r16} ms (${rratio}x)"
		if [ "$rratio" != n/a ] && [ "$f16" != n/a ]; then
			echo "$f1" >>"$TMP/files1" && echo "$f16" >>"$TMP/files16"
			echo "$r1" >>"$TMP/rest1" && echo "$r16" >>"$TMP/rest16" && echo "$rratio" >>"$TMP/restratio"
		fi
	done
	echo "median: own time per pod K=1 $(median 3 <"$TMP/k1") ms, K=16 $(median 3 <"$TMP/k16") ms, K=16/K=1 $(median 3 <"$TMP/ratio")x (bar <= 2x)"
	[ -s "$TMP/files1" ] && echo "median: own time in the file steps K=1 $(median 3 <"$TMP/files1") ms, K=16 $(median 3 <"$TMP/files16") ms; the rest K=1 $(median 3 <"$TMP/rest1") ms, K=16 $(median 3 <"$TMP/rest16") ms, K=16/K=1 $(median 3 <"$TMP/restratio")x"
	echo "median: process CPU per pod K=1 $(median 3 <"$TMP/cpu1") ms, K=16 $(median 3 <"$TMP/cpu16") ms, K=16/K=1 $(median 3 <"$TMP/cpuratio")x"
}

# bench runs the simulated runtime in a process of its own (podstep sim-serve): the CPU figure
# is podstep's alone. Twice: the pods' dirs on the disk (under mktemp -d), where making and removing
# them is most of podstep's own time and the filesystem serialises it, and on tmpfs (/dev/shm),
# where what is left is podstep's own work.
sim "simulated runtime, pod dirs under $TMP" --sim
if [ -d /dev/shm ]; then
	DIRS=$(mktemp -d /dev/shm/podstep-bench-overhead.XXXXXX)
	trap 'rm -rf "$TMP" "$DIRS"' EXIT
	sim "simulated runtime, pod dirs under $DIRS (tmpfs)" --sim
	rm -rf "$DIRS"
	DIRS=$TMP
fi

if [ -n "${PODSTEP_ENDPOINT:-}" ]; then
	echo "$PODSTEP_ENDPOINT, $RUNS runs of: podstep bench -n 20 --grace-period 0"
	: >"$TMP/own" && : >"$TMP/floor" && : >"$TMP/pct"
	for i in $(seq "$RUNS"); do
		bench "$TMP/rt.json" -r "$PODSTEP_ENDPOINT" -n 20 --grace-period 0
		rt=$(jq -r '.runtime.name + " " + .runtime.version' "$TMP/rt.json")
		own=$(jq '.levels[0].own.p50_ms' "$TMP/rt.json")
		floor=$(jq '.levels[0].cri_floor.p50_ms' "$TMP/rt.json")
		pct=$(jq '.levels[0].own_pct_of_floor' "$TMP/rt.json")
		echo "  run $i ($rt): own p50 ${own} ms, CRI floor p50 ${floor} ms: ${pct}%"
		echo "$own" >>"$TMP/own" && echo "$floor" >>"$TMP/floor" && echo "$pct" >>"$TMP/pct"
	done
	echo "median: own time per pod $(median 3 <"$TMP/own") ms, CRI floor $(median 3 <"$TMP/floor") ms, own/floor $(median 3 <"$TMP/pct")% (bar <= 5%)"
fi
