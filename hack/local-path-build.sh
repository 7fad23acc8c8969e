#!/usr/bin/env bash
# local-path-build.sh: rancher/local-path-provisioner v0.0.30 (kind's default StorageClass,
# `local-path`), built once from the Go module proxy inside the wrapper module hack/local-path/
# (its Kubernetes libraries pinned to the kubelet module's versions, so that the build reuses the
# kubelet's compiled packages: see hack/local-path/go.mod) into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/local-path-provisioner-v0.0.30/bin/local-path-provisioner
# for the test cluster (hack/cluster-up.sh starts it). Reused while its --version says v0.0.30 and
# the wrapper's go.mod and go.sum (their sha256, recorded beside it) are the same.
# Prints the binary's path as its last line. Under a lock: two callers at once build once.
# Log: .../local-path-provisioner-v0.0.30/build.log.
set -euo pipefail

VERSION=v0.0.30
MODULE=github.com/rancher/local-path-provisioner
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "local-path-provisioner-$VERSION")
BIN=$CACHE/bin/local-path-provisioner

log() { printf 'local-path-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

sum() { cat "$HERE/local-path/go.mod" "$HERE/local-path/go.sum" | sha256sum | cut -d' ' -f1; }

# works: the cached binary says it is VERSION (the build stamps main.VERSION) and was built from
# this go.mod and go.sum.
works() {
	[ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -qF "version $VERSION" &&
		[ -f "$CACHE/bin/source.sha256" ] && [ "$(cat "$CACHE/bin/source.sha256")" = "$(sum)" ]
}

# compile DIR: the wrapper module's tool, with the flags of the kubelet's build (CGO_ENABLED=0,
# -trimpath), which share the build cache's packages.
compile() {
	(cd "$HERE/local-path" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" \
		-ldflags "-s -w -X main.VERSION=$VERSION" -o "$1/local-path-provisioner" "$MODULE")
	sum >"$1/source.sha256"
}
build() {
	find_go "building local-path-provisioner"
	build_bin "$CACHE" "local-path-provisioner $VERSION" "under a minute after the kubelet's build, ~7 min without it" compile
}

cached "$CACHE" works build "local-path-provisioner $VERSION"
echo "$BIN"
