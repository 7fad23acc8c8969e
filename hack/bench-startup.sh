#!/usr/bin/env bash
# Start-up, memory and size of podstep next to crictl's (issues 14 and 36):
#   hack/bench-startup.sh [RUNS]        (default 20)
# In one run, RUNS interleaved rounds (podstep, crictl, podstep, crictl, ...: a change of the
# machine's load moves both alike; hack/lib/interleave.py, 3 warm-up rounds first) of
#   - `podstep version` against `crictl --version` (both print their version and exit): wall
#     time, peak RSS and CPU time, medians, and their ratio;
#   - `podstep plan -f testdata/pods/hello.yaml`;
#   - `podstep run --sim --auto -q --settle 0 --image-config off -f testdata/pods/hello.yaml`
#     (create and teardown of hello on the simulated runtime, served in podstep's own process);
# and, not interleaved:
#   - the binaries' sizes: podstep built as hack/release.sh builds it (stripped: -s -w), crictl as
#     cri-tools' release does (hack/crictl-build.sh);
#   - the package inits of `podstep version` under GODEBUG=inittrace=1, with stdout a pipe and a
#     terminal (a pty from `script`; TMUX unset, as in TestInitCost): their clock time, bytes and
#     allocations together (medians over RUNS), and the slowest package;
#   - the first TUI frame: `podstep run --sim -f testdata/pods/hello.yaml` in a detached tmux
#     session (120x40), from the moment the pane's shell execs podstep to the moment podstep has
#     written its first whole frame (the footer's "quit") to the terminal; `tmux pipe-pane` stamps
#     the time as it reads, so the figure is start-up plus the terminal's latency (what a user
#     waits for). The shell's `date` before the exec is inside the interval: it errs high.
# It prints a markdown table and writes it into docs/measurements.md between the lines
# "<!-- bench-startup:begin -->" and "<!-- bench-startup:end -->" (PODSTEP_BENCH_WRITE=0: print
# only).
# With CONTAINER_RUNTIME_ENDPOINT set (a real runtime: the containerd harness, hack/containerd-up.sh),
# the same rounds also run the create + teardown of hello there:
#   - `podstep run --auto -q --settle 0 --grace-period 0 -f testdata/pods/hello.yaml -r ENDPOINT`
#     against crictl's sequence `runp`, `create`, `start`, `stopp`, `rmp` of the same pod and
#     container (the sandbox and container configs below; crictl stopp kills at once, as a grace
#     period of 0 does): wall, CPU and peak RSS of the whole (interleave.py's sequence form: the
#     five crictl processes' CPU summed, their largest RSS). The image must be there already
#     (the harness imports busybox:1.35); neither side pulls.
# Issue 36's bars: version wall <= crictl's (ratio <= 1.0), version peak RSS <= 25 MiB, run of
# hello peak RSS <= 30 MiB, stripped binary <= 45 MiB, inits <= 2 ms and <= 1 MB. The script
# prints the figures; it does not judge them (TestInitCost in cmd/podstep guards the inits'
# allocations, which do not depend on the machine's load).
# Binaries: $PODSTEP_BIN, else ./cmd/podstep built stripped into a temp dir; $CRICTL_BIN, else
# hack/crictl-build.sh's (pinned, cached); $PODSTEP_BEFORE_BIN, when set, an older podstep measured
# in the same rounds (a third column: before and after a change).
# Needs: python3, tmux, perl (Time::HiRes), script (bsdutils); installed with apt-get if missing.
set -euo pipefail

RUNS=${1:-20}
WARMUP=3
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH

# need COMMAND PACKAGE [CHECK...]: install PACKAGE with apt-get unless CHECK (default: COMMAND
# on PATH) succeeds.
need() {
	local cmd=$1 pkg=$2
	shift 2
	if [ $# -eq 0 ]; then set -- command -v "$cmd"; fi
	"$@" >/dev/null 2>&1 && return
	echo "bench-startup: installing $pkg" >&2
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
	"$@" >/dev/null 2>&1 || {
		echo "bench-startup: needs $cmd (apt-get install $pkg)" >&2
		exit 2
	}
}
need python3 python3
need tmux tmux
need perl perl perl -MTime::HiRes -e 1
need script bsdutils

TMP=$(mktemp -d)
SESSION=podstep-bench-startup-$$
trap 'tmux kill-session -t "$SESSION" 2>/dev/null || true; rm -rf "$TMP"' EXIT
BIN=${PODSTEP_BIN:-}
if [ -z "$BIN" ]; then
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$TMP/podstep" ./cmd/podstep
	BIN=$TMP/podstep
fi
CRICTL=${CRICTL_BIN:-}
if [ -z "$CRICTL" ]; then
	CRICTL=$(bash hack/crictl-build.sh | tail -n 1)
fi
BEFORE=${PODSTEP_BEFORE_BIN:-}
POD=testdata/pods/hello.yaml
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# argv ARG...: the arguments as a JSON array (interleave.py's command form).
argv() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }
# interleave NAME=ARGV-JSON...: the rounds; sets R[NAME_wall], R[NAME_rss], R[NAME_cpu].
declare -A R=()
interleave() {
	local name wall rss cpu
	while read -r name wall rss cpu; do
		R[${name}_wall]=$wall R[${name}_rss]=$rss R[${name}_cpu]=$cpu
	done < <(python3 hack/lib/interleave.py "$RUNS" "$WARMUP" "$@")
}
run_args() { echo run --sim --auto -q --settle 0 --image-config off -f "$POD" --root-dir "$TMP/root-$1" --log-dir "$TMP/logs-$1"; }

# shellcheck disable=SC2046 # run_args' words are the arguments
set -- "pv=$(argv "$BIN" version)" "cv=$(argv "$CRICTL" --version)" \
	"pp=$(argv "$BIN" plan -f "$POD")" "pr=$(argv "$BIN" $(run_args new))"
if [ -n "$BEFORE" ]; then
	# shellcheck disable=SC2046
	set -- "$@" "bv=$(argv "$BEFORE" version)" "bp=$(argv "$BEFORE" plan -f "$POD")" "br=$(argv "$BEFORE" $(run_args old))"
fi
ENDPOINT=${CONTAINER_RUNTIME_ENDPOINT:-}
if [ -n "$ENDPOINT" ]; then
	"$BIN" info -r "$ENDPOINT" >/dev/null || {
		echo "bench-startup: runtime at $ENDPOINT not ready (CONTAINER_RUNTIME_ENDPOINT)" >&2
		exit 3
	}
	RUNTIME_NAME=$("$BIN" info -r "$ENDPOINT" | sed -n 's/^runtime: *//p')
	# hello as crictl's configs: the pod's name, namespace, hostname and log directory, the
	# container's image, command and log path.
	cat >"$TMP/pod.json" <<EOF
{"metadata": {"name": "hello", "namespace": "default", "uid": "bench-startup-crictl-$$", "attempt": 0},
 "hostname": "hello", "log_directory": "$TMP/crictl-logs", "linux": {}}
EOF
	cat >"$TMP/ctr.json" <<'EOF'
{"metadata": {"name": "hello", "attempt": 0}, "image": {"image": "docker.io/library/busybox:1.35"},
 "command": ["sh", "-c", "echo hello from podstep; sleep 3600"], "log_path": "hello/0.log", "linux": {}}
EOF
	crictl_seq=$(python3 -c 'import json, sys
c, e, pod, ctr = sys.argv[1:]
base = [c, "--config", "/dev/null", "-r", e, "-i", e]
print(json.dumps([base + ["runp", pod], base + ["create", "{0}", ctr, pod], base + ["start", "{1}"],
                  base + ["stopp", "{0}"], base + ["rmp", "{0}"]]))' "$CRICTL" "$ENDPOINT" "$TMP/pod.json" "$TMP/ctr.json")
	set -- "$@" "pc=$(argv "$BIN" run --auto -q --settle 0 --grace-period 0 -f "$POD" -r "$ENDPOINT" \
		--root-dir "$TMP/root-cri" --log-dir "$TMP/logs-cri")" "cc=$crictl_seq"
	if [ -n "$BEFORE" ]; then
		set -- "$@" "bc=$(argv "$BEFORE" run --auto -q --settle 0 --grace-period 0 -f "$POD" -r "$ENDPOINT" \
			--root-dir "$TMP/root-cri-old" --log-dir "$TMP/logs-cri-old")"
	fi
fi
interleave "$@"

# The reader at the end of pipe-pane: it reads the pane's output as it comes and, once the
# first frame's last row is there, writes the time (ns since the epoch) to its argument.
cat >"$TMP/firstframe.pl" <<'EOF'
use strict;
use Time::HiRes qw(time);
my $buf = '';
while (sysread(STDIN, my $chunk, 65536)) {
	$buf .= $chunk;
	if ($buf =~ /quit/) {
		my $now = sprintf("%.0f", time() * 1e9);
		open(my $fh, '>', "$ARGV[0].tmp") or die "$ARGV[0]: $!";
		print $fh "$now\n";
		close($fh);
		rename("$ARGV[0].tmp", $ARGV[0]) or die "$ARGV[0]: $!";
		exit 0;
	}
}
exit 1;
EOF

# wait_for WHAT CHECK...: poll CHECK every 10 ms, 10 s at most.
wait_for() {
	local what=$1
	shift
	for _ in $(seq 1000); do
		"$@" && return
		sleep 0.01
	done
	echo "bench-startup: timed out waiting for $what; screen:" >&2
	tmux capture-pane -p -t "$SESSION" >&2 || true
	exit 1
}
screen_has() { tmux capture-pane -p -t "$SESSION" 2>/dev/null | grep -q "$1"; }
session_gone() { ! tmux has-session -t "$SESSION" 2>/dev/null; }

# first_frame: one TUI start; prints the ms from exec to the first frame. The pane's shell
# waits for Enter, so the reader is attached before podstep writes anything. Afterwards podstep
# is quit as a user would (q, c: tear the pod down at once, q again) and must exit 0.
first_frame() {
	rm -rf "$TMP/start" "$TMP/end" "$TMP/exit" "$TMP/root" "$TMP/logs"
	tmux new-session -d -s "$SESSION" -x 120 -y 40 \
		"read _; date +%s%N >$TMP/start; $BIN run --sim --image-config off -f $POD --root-dir $TMP/root --log-dir $TMP/logs; echo \$? >$TMP/exit"
	tmux pipe-pane -t "$SESSION" "exec perl $TMP/firstframe.pl $TMP/end"
	tmux send-keys -t "$SESSION" Enter
	wait_for "the first frame" test -s "$TMP/end"
	tmux send-keys -t "$SESSION" q
	wait_for "the TUI to answer q" screen_has "tear down now?"
	tmux send-keys -t "$SESSION" c
	wait_for "the teardown" screen_has "torn down"
	tmux send-keys -t "$SESSION" q
	wait_for "podstep to exit" session_gone
	if [ "$(cat "$TMP/exit")" != 0 ]; then
		echo "bench-startup: podstep run --sim exited $(cat "$TMP/exit")" >&2
		exit 1
	fi
	echo $((($(cat "$TMP/end") - $(cat "$TMP/start")) / 1000)) | awk '{printf "%.1f\n", $1 / 1000}'
}

first_frame >/dev/null # warm-up
for _ in $(seq "$RUNS"); do
	first_frame
done >"$TMP/tui.txt"
tui_ms=$(median 1 <"$TMP/tui.txt")

# inittrace BIN MODE: RUNS runs of `BIN version` under GODEBUG=inittrace=1, stdout a pipe (MODE
# pipe) or a pty (MODE terminal); prints each init as a line "RUN PACKAGE CLOCK_MS BYTES ALLOCS".
# The trace's lines: init PKG @START ms, CLOCK ms clock, BYTES bytes, ALLOCS allocs.
inittrace() {
	local run
	for run in $(seq "$RUNS"); do
		if [ "$2" = terminal ]; then
			env -u TMUX TERM=xterm-256color GODEBUG=inittrace=1 \
				script -qec "$1 version 2>$TMP/trace" /dev/null >/dev/null
		else
			env -u TMUX GODEBUG=inittrace=1 "$1" version >/dev/null 2>"$TMP/trace"
		fi
		awk -v r="$run" '$1 == "init" && $6 == "ms" && $7 == "clock," { print r, $2, $5, $8, $10 }' "$TMP/trace"
	done
}
# init_figures BIN MODE: prints "CLOCK_MS KB ALLOCS SLOWEST_PKG SLOWEST_MS": the medians over the
# runs of all inits together, and the package whose median clock time is highest, with it.
init_figures() {
	local ms kb allocs
	inittrace "$1" "$2" >"$TMP/inits.txt"
	ms=$(awk '{ t[$1] += $3 } END { for (r in t) print t[r] }' "$TMP/inits.txt" | median 2)
	kb=$(awk '{ t[$1] += $4 } END { for (r in t) print t[r] / 1000 }' "$TMP/inits.txt" | median 0)
	allocs=$(awk '{ t[$1] += $5 } END { for (r in t) print t[r] }' "$TMP/inits.txt" | median 0)
	sort -k2,2 -k3,3g "$TMP/inits.txt" | awk -v ms="$ms" -v kb="$kb" -v allocs="$allocs" '
		function flush() { if (n) { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; if (m > best) { best = m; who = pkg } } }
		$2 != pkg { flush(); pkg = $2; n = 0 }
		{ v[++n] = $3 }
		END { flush(); printf "%s %s %s %s %.2f\n", ms, kb, allocs, who, best }'
}
read -r pipe_ms pipe_kb pipe_allocs pipe_pkg pipe_slowest < <(init_figures "$BIN" pipe)
read -r term_ms term_kb term_allocs term_pkg term_slowest < <(init_figures "$BIN" terminal)
if [ -n "$BEFORE" ]; then
	read -r bpipe_ms bpipe_kb bpipe_allocs _ _ < <(init_figures "$BEFORE" pipe)
	read -r bterm_ms bterm_kb bterm_allocs _ _ < <(init_figures "$BEFORE" terminal)
fi

mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
# row LABEL PODSTEP CRICTL [BEFORE]: one table row; the ratio when both figures are numbers.
row() {
	local r="" b=""
	if [ -n "$3" ]; then r=$(ratio "${2%% *}" "${3%% *}"); fi
	if [ -n "$BEFORE" ]; then b=" ${4:-} |"; fi
	printf '| %s | %s | %s | %s |%s\n' "$1" "$2" "${3:-}" "$r" "$b"
}
pv=$("$BIN" version | head -n 1)
cv=$("$CRICTL" --version)
# shellcheck disable=SC2016 # the backquotes are markdown's
{
	printf 'Measured %s UTC on %s cores, load average %s at the start and %s at the end; %d interleaved\n' \
		"$(date -u '+%Y-%m-%d %H:%M')" "$(nproc)" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$RUNS"
	printf 'rounds after %d warm-up rounds, medians (`hack/bench-startup.sh %d`); %s, %s.\n\n' "$WARMUP" "$RUNS" "$pv" "$cv"
	if [ -n "$BEFORE" ]; then
		printf '| | podstep | crictl | podstep / crictl | podstep before (%s) |\n| --- | --- | --- | --- | --- |\n' "$("$BEFORE" version | head -n 1)"
	else
		printf '| | podstep | crictl | podstep / crictl |\n| --- | --- | --- | --- |\n'
	fi
	row '`version` wall' "${R[pv_wall]} ms" "${R[cv_wall]} ms" "${R[bv_wall]:-} ms"
	row '`version` peak RSS' "${R[pv_rss]} MiB" "${R[cv_rss]} MiB" "${R[bv_rss]:-} MiB"
	row '`version` CPU (user + system)' "${R[pv_cpu]} ms" "${R[cv_cpu]} ms" "${R[bv_cpu]:-} ms"
	row '`plan -f hello`: wall, peak RSS' "${R[pp_wall]} ms, ${R[pp_rss]} MiB" "" "${R[bp_wall]:-} ms, ${R[bp_rss]:-} MiB"
	row '`run --sim --auto` of hello (create + teardown): wall, CPU, peak RSS' \
		"${R[pr_wall]} ms, ${R[pr_cpu]} ms, ${R[pr_rss]} MiB" "" "${R[br_wall]:-} ms, ${R[br_cpu]:-} ms, ${R[br_rss]:-} MiB"
	if [ -n "$ENDPOINT" ]; then
		row "create + teardown of hello on $RUNTIME_NAME (podstep \`run --auto\`; crictl runp, create, start, stopp, rmp): wall" \
			"${R[pc_wall]} ms" "${R[cc_wall]} ms" "${R[bc_wall]:-} ms"
		row '… CPU (user + system)' "${R[pc_cpu]} ms" "${R[cc_cpu]} ms" "${R[bc_cpu]:-} ms"
		row '… peak RSS' "${R[pc_rss]} MiB" "${R[cc_rss]} MiB" "${R[bc_rss]:-} MiB"
	fi
	row 'binary (podstep: as hack/release.sh builds it)' "$(mib "$BIN") MiB" "$(mib "$CRICTL") MiB" "$(if [ -n "$BEFORE" ]; then mib "$BEFORE"; fi) MiB"
	row 'package inits of `version`, stdout a pipe: clock, KB, allocations' "${pipe_ms} ms, ${pipe_kb} KB, ${pipe_allocs}" "" \
		"${bpipe_ms:-} ms, ${bpipe_kb:-} KB, ${bpipe_allocs:-}"
	row 'package inits of `version`, stdout a terminal' "${term_ms} ms, ${term_kb} KB, ${term_allocs}" "" \
		"${bterm_ms:-} ms, ${bterm_kb:-} KB, ${bterm_allocs:-}"
	row 'slowest package init (pipe; terminal)' "${pipe_slowest} ms ${pipe_pkg}; ${term_slowest} ms ${term_pkg}" ""
	row 'first TUI frame (`run --sim`, tmux 120x40)' "${tui_ms} ms" ""
} >"$TMP/table.md"
cat "$TMP/table.md"

if [ "${PODSTEP_BENCH_WRITE:-1}" != 0 ]; then
	md=docs/measurements.md
	if ! grep -q '^<!-- bench-startup:begin -->$' "$md" || ! grep -q '^<!-- bench-startup:end -->$' "$md"; then
		echo "bench-startup: $md has no bench-startup markers; the table is not written" >&2
		exit 1
	fi
	awk -v table="$TMP/table.md" '
		/^<!-- bench-startup:begin -->$/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
		/^<!-- bench-startup:end -->$/ { skip = 0 }
		!skip' "$md" >"$TMP/md" && cat "$TMP/md" >"$md"
	echo "bench-startup: the table is in $md" >&2
fi
