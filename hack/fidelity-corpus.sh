#!/usr/bin/env bash
# Fidelity on all 118 real-world pods, for a developer (CI compares a subset: TestFidelityCorpus's corpusCI):
#   hack/fidelity-corpus.sh [-run REGEXP]     (default: every pod on both nodes)
# Runs TestFidelityCorpus with PODSTEP_FIDELITY_CORPUS=all against the cluster the environment names,
# as the cluster tests read it (KUBECONFIG, PODSTEP_NODE_*, PODSTEP_RECORD_DIR_*, PODSTEP_REPLAY_ENDPOINT_*,
# PODSTEP_BIN, ...: hack/test.sh's cluster phase, or `source` a private cluster's env file), then prints
# the table of verdicts: pod, runtime, verdict (equal, listed, refused, excluded, FAILED), the counts of
# calls compared up to the first StartContainer, and the listed kinds or why. The full log is kept in
# $TMPDIR/fidelity-corpus.log. The corpus: $PODSTEP_CORPUS, else ../shared/realworld beside the repository.
# A comparison takes 1-3 min (the kubelet's garbage collector writes the recording); 16 run at once.
set -uo pipefail

# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
if [ -z "${KUBECONFIG:-}" ] || [ -z "${PODSTEP_BIN:-}" ]; then
	echo "fidelity-corpus: KUBECONFIG and PODSTEP_BIN must name the cluster and its podstep (source the cluster's env file)" >&2
	exit 2
fi
run='^TestFidelityCorpus$'
if [ "${1:-}" = -run ] && [ -n "${2:-}" ]; then run="^TestFidelityCorpus\$/pods/$2"; fi
LOG=${TMPDIR:-/tmp}/fidelity-corpus.log
export CGO_ENABLED=0 GOFLAGS=-trimpath PODSTEP_FIDELITY_CORPUS=all
rc=0
go test -count=1 -tags cluster -timeout 120m ./test/cluster/ -run "$run" -v >"$LOG" 2>&1 || rc=$?
# The summary: the "fidelity: ..." line and the table logged after it, up to the next test line.
awk '/fidelity: [0-9]+ compared/ { on = 1; sub(/^.*fidelity: /, "fidelity: ") }
	on && /^(=== |--- |FAIL|ok|PASS)/ { on = 0 }
	on { sub(/^    /, ""); print }' "$LOG"
grep -E '^\s+--- FAIL' "$LOG" | sed 's/^ */failed: /'
echo "log: $LOG (go test exit $rc)"
exit "$rc"
