#!/usr/bin/env bash
# etcd-build.sh: etcd v3.6.16 for podstep's cluster tests (hack/cluster-up.sh), built once from
# the Go module proxy out of the wrapper module hack/etcd/ (etcd's server module has relative
# replace lines, which `go install go.etcd.io/etcd/server/v3@v3.6.16` refuses) into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/etcd-v3.6.16/bin/etcd
# and reused while `etcd --version` names 3.6.16. Prints the binary's path as its last line.
# Under a lock: two callers at once build once. Log: .../etcd-v3.6.16/build.log.
# (Debian's etcd-server is 3.4.23: too old for kube-apiserver v1.37.)
set -euo pipefail

ETCD_VERSION=v3.6.16
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "etcd-$ETCD_VERSION")
BIN=$CACHE/bin/etcd

log() { printf 'etcd-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# works: the cached binary runs and names the pinned version.
# (Its output read whole first: grep -q stopping early would SIGPIPE etcd, failing under pipefail.)
works() {
	local out
	[ -x "$BIN" ] && out=$("$BIN" --version 2>/dev/null) && grep -qx "etcd Version: ${ETCD_VERSION#v}" <<<"$out"
}

# compile DIR: GitSHA as etcd's release builds stamp it (scripts/build-binary.sh), with the tag:
# without it --version says "Git SHA: Not provided (use ./build instead of go build)".
compile() (
	cd "$HERE/etcd" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" -o "$1/etcd" \
		-ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
		go.etcd.io/etcd/server/v3
)
build() {
	find_go "building etcd"
	build_bin "$CACHE" "etcd $ETCD_VERSION" "about a minute or two the first time" compile
}

cached "$CACHE" works build "etcd $ETCD_VERSION"
echo "$BIN"
