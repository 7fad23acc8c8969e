#!/usr/bin/env bash
# kubelet-build.sh: the real kubelet v1.37.0 for podstep's proxy integration tests, built once
# from the Go module proxy (hack/kubelet/go.mod: k8s.io/kubernetes v1.37.0 with each staging
# module replaced by its published v0.37.0) into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/kubelet-v1.37.0/bin/kubelet
# and reused while `kubelet --version` says v1.37.0. Prints the binary's path as its last line.
# Under a lock: two callers at once build once. Log: .../kubelet-v1.37.0/build.log.
set -euo pipefail

KUBELET_VERSION=v1.37.0
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "kubelet-$KUBELET_VERSION")
BIN=$CACHE/bin/kubelet

log() { printf 'kubelet-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# works: the cached binary runs and names the pinned version.
works() { [ -x "$BIN" ] && [[ $("$BIN" --version 2>/dev/null) == "Kubernetes $KUBELET_VERSION" ]]; }

# compile DIR: the version is stamped as Kubernetes' release builds do (hack/lib/version.sh), so
# that --version and the node object say v1.37.0, not v0.0.0-master.
compile() (
	pkg=k8s.io/component-base/version
	cd "$HERE/kubelet" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" -o "$1/kubelet" \
		-ldflags "-s -w -X $pkg.gitVersion=$KUBELET_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kubelet
)
build() {
	find_go "building the kubelet"
	build_bin "$CACHE" "kubelet $KUBELET_VERSION" "several minutes the first time" compile
}

cached "$CACHE" works build "kubelet $KUBELET_VERSION"
echo "$BIN"
