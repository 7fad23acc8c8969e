#!/usr/bin/env bash
# The workshop room's bar (issue 23, item 4): many users on one machine, each running the same
# scenario on the simulated runtime at once.
#   hack/bench-room.sh [ROUNDS]      (default 3; as root: it adds and removes the users)
# Each round:
# - single: one `podstep run --auto --sim -f hello.yaml` as psu1, alone (the baseline);
# - room:   USERS (default 30) runs at once, each as its own user psu1..psuUSERS (useradd, no home:
#           HOME does not exist, as on a fresh workshop account), through setpriv;
# - same:   SAME (default 10) runs at once as the one user psu1 (a shared workshop account).
# Every run must exit 0, and nothing may be left: no podstep-sim-* dir of a psu user in the temp
# dir, no process of theirs. Prints the median wall time of each kind over all rounds' runs and
# the ratios to single (bar: <= 2x). The users are removed at the end, however it ends.
# Binary: $PODSTEP_BIN, else built. MANIFEST overrides the pod (default testdata/pods/hello.yaml).
set -euo pipefail

ROUNDS=${1:-3}
USERS=${USERS:-30}
SAME=${SAME:-10}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
[ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
if [ "$(id -u)" != 0 ]; then
	echo "bench-room: run as root (it adds the users psu1..psu$USERS)" >&2
	exit 2
fi

WORK=$(mktemp -d /tmp/bench-room.XXXXXX)
chmod 755 "$WORK"
cleanup() {
	for i in $(seq 1 "$USERS"); do
		userdel "psu$i" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
if [ -n "${PODSTEP_BIN:-}" ]; then
	cp "$PODSTEP_BIN" "$WORK/podstep"
else
	go build -o "$WORK/podstep" ./cmd/podstep
fi
cp "${MANIFEST:-testdata/pods/hello.yaml}" "$WORK/pod.yaml"
chmod 755 "$WORK/podstep"
chmod 644 "$WORK/pod.yaml"
for i in $(seq 1 "$USERS"); do
	id "psu$i" >/dev/null 2>&1 || useradd -M -d "/home/psu$i" -s /usr/sbin/nologin "psu$i"
done

# one USER LABEL N: a run as USER, its wall time in ms into $WORK/LABEL.times, its exit code checked.
one() {
	local user=$1 label=$2 n=$3 start end rc=0
	start=$(date +%s%N)
	setpriv --reuid "$user" --regid "$user" --clear-groups env -i HOME="/home/$user" PATH=/usr/bin:/bin \
		"$WORK/podstep" run --auto -q --sim -f "$WORK/pod.yaml" >"$WORK/out.$label.$n" 2>&1 || rc=$?
	end=$(date +%s%N)
	if [ "$rc" != 0 ]; then
		echo "bench-room: $label run $n as $user: exit $rc" >&2
		cat "$WORK/out.$label.$n" >&2
		echo fail >>"$WORK/failures"
	fi
	echo $(((end - start) / 1000000)) >>"$WORK/$label.times"
}

median() { sort -n "$1" | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }

for r in $(seq 1 "$ROUNDS"); do
	one psu1 single "$r"
	for i in $(seq 1 "$USERS"); do one "psu$i" room "$r.$i" & done
	wait
	for i in $(seq 1 "$SAME"); do one psu1 same "$r.$i" & done
	wait
	left=""
	for i in $(seq 1 "$USERS"); do
		left+=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -user "psu$i" -name 'podstep-sim-*' 2>/dev/null)
		left+=$(pgrep -u "psu$i" 2>/dev/null || true)
	done
	if [ -n "$left" ]; then
		echo "bench-room: round $r left: $left" >&2
		echo fail >>"$WORK/failures"
	fi
	echo "round $r: single $(tail -1 "$WORK/single.times") ms; room of $USERS users median $(median "$WORK/room.times") ms; $SAME as one user median $(median "$WORK/same.times") ms (so far)"
done

single=$(median "$WORK/single.times")
room=$(median "$WORK/room.times")
same=$(median "$WORK/same.times")
fails=0
[ -f "$WORK/failures" ] && fails=$(wc -l <"$WORK/failures")
echo "median wall time per run: single $single ms; $USERS users at once $room ms ($(awk -v a="$room" -v b="$single" 'BEGIN{printf "%.2f", a/b}')x); $SAME as one user at once $same ms ($(awk -v a="$same" -v b="$single" 'BEGIN{printf "%.2f", a/b}')x); runs failed or left something: $fails"
[ "$fails" = 0 ]
