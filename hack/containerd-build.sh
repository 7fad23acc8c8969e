#!/usr/bin/env bash
# containerd-build.sh: containerd v2.4.2 (containerd, containerd-shim-runc-v2, ctr) and the runc it
# runs pods with, built from the Go module proxy once and cached by version, without starting a
# harness: hack/containerd-up.sh does the same first thing (PODSTEP_CONTAINERD=2), and
# hack/prebuild.sh calls this to build both ahead of it. Under the caches' locks: two callers at
# once build once. Prints the folder of the containerd binaries as its last line.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
export PODSTEP_CONTAINERD=2
log() { printf 'containerd-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=harness-env.sh
. "$HERE/harness-env.sh"
# shellcheck source=lib/harness-containerd2.sh
. "$HERE/lib/harness-containerd2.sh"
# shellcheck source=lib/harness-runc.sh
. "$HERE/lib/harness-runc.sh"
ensure_containerd2
ensure_runc
echo "$C2_CACHE/bin"
