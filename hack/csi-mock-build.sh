#!/usr/bin/env bash
# csi-mock-build.sh: csimock, the Kubernetes e2e mock CSI driver
# (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service, v1.37.0) served on a unix
# socket by hack/kubelet/csimock/main.go, for podstep's CSI integration test. Built once, inside the
# kubelet's wrapper module (hack/kubelet/go.mod: k8s.io/kubernetes v1.37.0 from the Go module
# proxy, staging modules replaced by their published v0.37.0), into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/csimock-v1.37.0/bin/csimock
# and reused while the source it was built from (main.go's sha256, recorded beside it) is the same.
# Prints the binary's path as its last line. Under a lock: two callers at once build once.
# Log: .../csimock-v1.37.0/build.log.
set -euo pipefail

K8S_VERSION=v1.37.0
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "csimock-$K8S_VERSION")
BIN=$CACHE/bin/csimock
SRC=$HERE/kubelet/csimock/main.go

log() { printf 'csi-mock-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

sum() { sha256sum "$SRC" | cut -d' ' -f1; }

# works: the cached binary exists and was built from this main.go.
works() { [ -x "$BIN" ] && [ -f "$CACHE/bin/source.sha256" ] && [ "$(cat "$CACHE/bin/source.sha256")" = "$(sum)" ]; }

# compile DIR: main.go is compiled as a command-line package in hack/kubelet's module, so that
# its imports resolve to k8s.io/kubernetes v1.37.0 and the versions that module pins (its build tag
# csimock keeps it out of podstep's own module: go build ./... and the linters skip it).
compile() {
	(cd "$HERE/kubelet" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" -tags csimock -ldflags "-s -w" -o "$1/csimock" "$SRC")
	sum >"$1/source.sha256"
}
build() {
	find_go "building csimock"
	build_bin "$CACHE" "csimock (mock CSI driver of Kubernetes $K8S_VERSION)" "a minute or two the first time" compile
}

cached "$CACHE" works build "csimock $K8S_VERSION"
echo "$BIN"
