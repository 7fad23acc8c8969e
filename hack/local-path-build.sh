#!/usr/bin/env bash
# local-path-build.sh: rancher/local-path-provisioner v0.0.30 (kind's default StorageClass,
# `local-path`), built once from the Go module proxy (go install github.com/rancher/local-path-provisioner@v0.0.30,
# with the dependency versions of its own go.mod) into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/local-path-provisioner-v0.0.30/bin/local-path-provisioner
# for the test cluster (hack/cluster-up.sh starts it). Reused while its --version says v0.0.30.
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

# works: the cached binary runs and says it is VERSION (the build stamps main.VERSION).
works() { [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -qF "version $VERSION"; }

# compile DIR: go install MODULE@VERSION (module mode, the versions of the module's own go.mod and
# go.sum, downloaded from the module proxy; its vendor folder is not in the module's zip), into DIR.
compile() {
	(cd / && GOWORK=off GOFLAGS='' GOBIN="$1" CGO_ENABLED=0 "$GO" install -trimpath \
		-ldflags "-s -w -X main.VERSION=$VERSION" "$MODULE@$VERSION")
}
build() {
	find_go "building local-path-provisioner"
	build_bin "$CACHE" "local-path-provisioner $VERSION" "about a minute the first time" compile
}

cached "$CACHE" works build "local-path-provisioner $VERSION"
echo "$BIN"
