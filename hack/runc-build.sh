#!/usr/bin/env bash
# Build runc from the Go module proxy, once, into a cache keyed by its version:
#
#   bash hack/runc-build.sh          prints the path of the runc binary (last line of stdout)
#
# Why: user namespaces (`hostUsers: false`) need idmapped mounts in the OCI runtime (runc >= 1.2);
# Debian 12's runc is 1.1.5. The containerd 2.x harness (hack/containerd-up.sh) runs its pods with
# this runc (the shim's BinaryName). Built with cgo and the seccomp build tag against Debian's
# libseccomp-dev (installed here when missing), as runc's release builds are; the version is
# stamped with -X main.version as runc's Makefile does, so `runc --version` names it.
#
# Cache: ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/runc-<version>/bin/runc, reused while it says
# that version; built under a lock (two harnesses starting at once build once). Log: build.log.
# Variables: PODSTEP_RUNC_VERSION (default below), PODSTEP_CACHE_DIR. See hack/README.md.
set -euo pipefail

RUNC_VERSION=${PODSTEP_RUNC_VERSION:-v1.3.6}
RUNC_MODULE=github.com/opencontainers/runc
# shellcheck source=lib/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"
RUNC_CACHE=$(cache_dir "runc-$RUNC_VERSION")
RUNC_BIN=$RUNC_CACHE/bin/runc

log() { printf '%s\n' "$*"; }
die() {
	printf 'runc-build: %s\n' "$*" >&2
	exit 1
}

[[ $RUNC_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "PODSTEP_RUNC_VERSION=$RUNC_VERSION: expected a runc release such as v1.3.6"

# runc_works: the cached binary runs and says it is the pinned version with seccomp.
runc_works() {
	local v
	[ -x "$RUNC_BIN" ] || return 1
	v=$("$RUNC_BIN" --version 2>/dev/null) || return 1
	[[ $v == "runc version ${RUNC_VERSION#v}"* ]] && [[ $v == *"libseccomp: "* ]]
}

compile() (
	cd / && GOWORK=off GOBIN=$1 CGO_ENABLED=1 "$GO" install "$PINNED_GCFLAGS" -tags seccomp \
		-ldflags "-X main.version=${RUNC_VERSION#v}" "$RUNC_MODULE@$RUNC_VERSION"
)
build_runc() {
	find_go "building runc"
	if ! pkg-config --exists libseccomp 2>/dev/null; then
		log "installing: libseccomp-dev pkg-config (runc's seccomp support)"
		apt_need libseccomp-dev pkg-config
	fi
	build_bin "$RUNC_CACHE" "runc $RUNC_VERSION" "seccomp, cgo" compile
}

cached "$RUNC_CACHE" runc_works build_runc "runc $RUNC_VERSION"
log "$RUNC_BIN"
