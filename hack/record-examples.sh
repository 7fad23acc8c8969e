#!/usr/bin/env bash
# record-examples.sh: records the workshop recordings on a real containerd,
# into testdata/recordings/NAME.rec.gz (replay them anywhere with
# `podstep replay FILE --auto`, or as a page with `--html OUT.html`).
#
#   up=$(PODSTEP_CONTAINERD=2 hack/containerd-up.sh) &&
#     export $(grep -E '^(CONTAINER_RUNTIME_ENDPOINT|PODSTEP_REGISTRY_IMAGE|PODSTEP_REGISTRY_PASSWORD)=' <<<"$up")
#   hack/record-examples.sh
#   PODSTEP_CONTAINERD=2 hack/containerd-down.sh
#
# The shipped ones are recorded on containerd 2 (the newer harness).
# cmd/podstep's TestShippedRecordingsCurrent fails when today's podstep
# would send or record them differently: then run this again and commit
# the recordings with the goldens (`go test ./cmd/podstep ./internal/tui -update`).
#
# Needs root (podstep run on containerd). Records: hello, init, a failing
# postStart hook, a crash loop, a pull the harness registry refuses (401: no
# credentials), OutOfcpu and a sidecar with a startup probe. Each recording
# is checked: it replays to its summary, and it holds no registry password.
# Variables: CONTAINER_RUNTIME_ENDPOINT (required), PODSTEP_REGISTRY_IMAGE
# (the harness registry's private image; required for the 401 example),
# PODSTEP_REGISTRY_PASSWORD (checked absent), PODSTEP_BIN (skips the build),
# PODSTEP_RECORDINGS_DIR (default testdata/recordings).
set -euo pipefail
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH

die() { echo "record-examples.sh: $*" >&2; exit 1; }
[ -n "${CONTAINER_RUNTIME_ENDPOINT:-}" ] ||
	die 'CONTAINER_RUNTIME_ENDPOINT is not set: start the harness and export its variables (see the top of this script)'
[ -n "${PODSTEP_REGISTRY_IMAGE:-}" ] ||
	die "PODSTEP_REGISTRY_IMAGE is not set (the harness registry's private image, printed by hack/containerd-up.sh)"
out=${PODSTEP_RECORDINGS_DIR:-testdata/recordings}
mkdir -p "$out"

tmp=$(mktemp -d /tmp/podstep-record-examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
podstep_bin "$tmp"
bin=$BIN

# The 401 example: the registry's private image, no pull secret.
cat >"$tmp/pull-401.yaml" <<YAML
# The harness registry wants credentials; this pod has none: the pull gets 401.
apiVersion: v1
kind: Pod
metadata:
  name: pull-401
spec:
  containers:
  - name: app
    image: $PODSTEP_REGISTRY_IMAGE
    imagePullPolicy: Always
    command: ["sh", "-c", "echo unreachable; sleep 3600"]
YAML

# record NAME MANIFEST [FLAGS...]: one run, recorded. The run's own exit code
# is the example's outcome (a failing hook exits 1); what matters is that
# the recording reads to its summary.
record() {
	local name=$1 manifest=$2 rec="$out/$1.rec.gz" code=0
	shift 2
	rm -f "$rec"
	mkdir -p "$tmp/$name"
	"$bin" run --auto -f "$manifest" -r "$CONTAINER_RUNTIME_ENDPOINT" --grace-period 0 \
		--root-dir "$tmp/$name/root" --log-dir "$tmp/$name/logs" --record "$rec" "$@" \
		>"$tmp/$name.out" 2>&1 || code=$?
	"$bin" replay "$rec" --auto -o json >"$tmp/$name.json" 2>/dev/null ||
		die "$name: $rec does not replay: $(cat "$tmp/$name.out")"
	grep -q '"type":"summary"' "$tmp/$name.json" || die "$name: $rec has no summary"
	if [ -n "${PODSTEP_REGISTRY_PASSWORD:-}" ] && gzip -dc "$rec" | grep -qF "$PODSTEP_REGISTRY_PASSWORD"; then
		rm -f "$rec"
		die "$name: the recording holds the registry password: removed"
	fi
	printf '%-24s exit %d  %s\n' "$rec" "$code" "$(tail -1 "$tmp/$name.out")"
}

restarts=(--max-restarts 2 --backoff-scale 0.01)
record hello testdata/pods/hello.yaml
record init testdata/pods/init.yaml
record poststart-fails internal/scenario/data/poststart-fails.yaml "${restarts[@]}"
record crashloop internal/scenario/data/crashloop.yaml "${restarts[@]}"
record pull-401 "$tmp/pull-401.yaml"
record out-of-cpu internal/scenario/data/out-of-cpu.yaml
record sidecar-startup-probe internal/scenario/data/sidecar-startup-probe.yaml --wait-ready
