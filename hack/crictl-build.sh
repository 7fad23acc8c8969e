#!/usr/bin/env bash
# Build crictl (sigs.k8s.io/cri-tools) from the Go module proxy, once, into a cache keyed by its
# version, as cri-tools' release does (CGO_ENABLED=0, -trimpath, stripped: -s -w, the version
# stamped into sigs.k8s.io/cri-tools/pkg/version.Version):
#
#   bash hack/crictl-build.sh        prints the path of the crictl binary (last line of stdout)
#
# Why: hack/bench-startup.sh compares podstep's start-up, memory and size with crictl's, the CRI
# client every node has; a crictl already on PATH is not pinned (its version and build flags vary).
# Cache: ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/crictl-<version>/bin/crictl, reused while it says
# that version; built under a lock. Log: build.log. Variables: PODSTEP_CRICTL_VERSION (default
# below), PODSTEP_CACHE_DIR.
set -euo pipefail

CRICTL_VERSION=${PODSTEP_CRICTL_VERSION:-v1.37.0}
CRICTL_MODULE=sigs.k8s.io/cri-tools
# shellcheck source=lib/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"
CRICTL_CACHE=$(cache_dir "crictl-$CRICTL_VERSION")
CRICTL_BIN=$CRICTL_CACHE/bin/crictl

log() { printf 'crictl-build: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

[[ $CRICTL_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "PODSTEP_CRICTL_VERSION=$CRICTL_VERSION: expected a cri-tools release such as v1.37.0"

# crictl_works: the cached binary runs and says it is the pinned version.
crictl_works() {
	local v
	[ -x "$CRICTL_BIN" ] || return 1
	v=$("$CRICTL_BIN" --version 2>/dev/null) || return 1
	[ "$v" = "crictl version $CRICTL_VERSION" ]
}

# compile DIR: go install of the module at its tag (outside any module: GOWORK off, from /).
compile() (
	cd / && GOWORK=off GOFLAGS='' GOBIN=$1 CGO_ENABLED=0 "$GO" install -trimpath "$PINNED_GCFLAGS" \
		-ldflags "-s -w -X $CRICTL_MODULE/pkg/version.Version=$CRICTL_VERSION" "$CRICTL_MODULE/cmd/crictl@$CRICTL_VERSION"
)
build_crictl() {
	find_go "building crictl"
	build_bin "$CRICTL_CACHE" "crictl $CRICTL_VERSION" "a minute or two the first time" compile
}

cached "$CRICTL_CACHE" crictl_works build_crictl "crictl $CRICTL_VERSION"
echo "$CRICTL_BIN"
