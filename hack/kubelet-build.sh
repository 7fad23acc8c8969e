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
CACHE=${PODSTEP_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podstep}/kubelet-$KUBELET_VERSION
BIN=$CACHE/bin/kubelet

log() { printf 'kubelet-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# works: the cached binary runs and names the pinned version.
works() { [ -x "$BIN" ] && [[ $("$BIN" --version 2>/dev/null) == "Kubernetes $KUBELET_VERSION" ]]; }

build() {
	local go tmp=$CACHE/bin.new out=$CACHE/build.log start=$SECONDS pkg=k8s.io/component-base/version
	go=$(command -v go || true)
	[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
	[ -n "$go" ] || die "building the kubelet needs go: no go toolchain in PATH or /usr/local/go/bin"
	log "building kubelet $KUBELET_VERSION from the Go module proxy into $CACHE/bin (several minutes the first time; log $out)"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# The version is stamped as Kubernetes' release builds do (hack/lib/version.sh), so that
	# --version and the node object say v1.37.0, not v0.0.0-master.
	if ! (cd "$HERE/kubelet" && GOWORK=off CGO_ENABLED=0 "$go" build -trimpath -o "$tmp/kubelet" \
		-ldflags "-s -w -X $pkg.gitVersion=$KUBELET_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kubelet) >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -rf "$tmp"
		die "go build of kubelet $KUBELET_VERSION failed (log: $out)"
	fi
	rm -rf "${CACHE:?}/bin"
	mv "$tmp" "$CACHE/bin"
	log "built kubelet $KUBELET_VERSION in $((SECONDS - start)) s"
}

mkdir -p "$CACHE"
(
	flock 9
	works || build
	works || die "$BIN does not say Kubernetes $KUBELET_VERSION after the build: $("$BIN" --version 2>&1 | head -n 1)"
) 9>"$CACHE/.lock"
echo "$BIN"
