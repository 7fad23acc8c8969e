#!/usr/bin/env bash
# The verdict of every real-world pod on the simulated runtime, and what it rests on:
#   hack/corpus.sh [CORPUS]   (default: $PODSTEP_CORPUS, else ../shared/realworld beside the repository)
# Runs `podstep run --sim --auto -o json -f POD` for each CORPUS/pods/*.yaml, two at a time, and
# prints one line per pod, in file order:
#   FILE  STATUS  READY  [REASON: message]  rests on: CONTAINER: what; ...
# so that a change that moves a verdict shows in review (diff two outputs). The waits are shortened
# (--backoff-scale 0.01, --init-timeout 30s): they change how long a run takes, not where it ends.
# A pod podstep refuses (bad input) prints its exit code and the error's first line.
# Binary: $PODSTEP_BIN, else built into a temp dir. Needs jq.
set -euo pipefail

# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
CORPUS=${1:-${PODSTEP_CORPUS:-../shared/realworld}}
[ -d "$CORPUS/pods" ] || {
	echo "corpus: no $CORPUS/pods" >&2
	exit 2
}
command -v jq >/dev/null 2>&1 || {
	echo "corpus: needs jq (apt-get install jq)" >&2
	exit 2
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
podstep_bin "$TMP"
export BIN TMP

one() {
	local pod=$1 name out rc=0
	name=$(basename "$pod" .yaml)
	out=$TMP/$name
	"$BIN" run --sim --auto -o json -f "$pod" --backoff-scale 0.01 --init-timeout 30s \
		>"$out.json" 2>"$out.err" </dev/null || rc=$?
	if ! grep -q '"type":"summary"' "$out.json"; then
		printf '%s  exit %d: %s\n' "$name" "$rc" "$(head -1 "$out.err" | tr -d '\r')" >"$out.line"
		return
	fi
	jq -r --arg name "$name" 'select(.type == "summary") |
		[$name, .display, .ready,
			(if .failure then "\(.failure.reason): \(.failure.message)" else empty end),
			(if (.rests_on // []) | length > 0 then "rests on: " + ((.rests_on) | join("; ")) else empty end)]
		| join("  ") | gsub("[\u0000-\u001f]"; " ")' "$out.json" >"$out.line"
}
export -f one

# shellcheck disable=SC2016 # "$0" is expanded by the child bash, not here
find "$CORPUS/pods" -name '*.yaml' -print0 | sort -z | xargs -0 -n1 -P2 bash -c 'one "$0"'
for f in "$TMP"/*.line; do cat "$f"; done
