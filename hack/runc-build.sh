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
RUNC_CACHE=${PODSTEP_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podstep}/runc-$RUNC_VERSION
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

ensure_libseccomp() {
	if pkg-config --exists libseccomp 2>/dev/null; then
		return 0
	fi
	log "installing: libseccomp-dev pkg-config (runc's seccomp support)"
	local out
	out=$(mktemp)
	if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libseccomp-dev pkg-config ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libseccomp-dev pkg-config; }; } >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		die "apt-get install libseccomp-dev pkg-config failed"
	fi
	rm -f "$out"
}

build_runc() {
	local go tmp=$RUNC_CACHE/bin.new out=$RUNC_CACHE/build.log start=$SECONDS
	go=$(command -v go || true)
	[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
	[ -n "$go" ] || die "no go toolchain in PATH or /usr/local/go/bin"
	ensure_libseccomp
	log "building runc $RUNC_VERSION from the Go module proxy into $RUNC_CACHE/bin (log $out)"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! (cd / && GOWORK=off GOBIN=$tmp CGO_ENABLED=1 "$go" install -tags seccomp \
		-ldflags "-X main.version=${RUNC_VERSION#v}" "$RUNC_MODULE@$RUNC_VERSION") >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -rf "$tmp"
		die "go install of runc $RUNC_VERSION failed (log: $out)"
	fi
	rm -rf "${RUNC_CACHE:?}/bin"
	mv "$tmp" "$RUNC_CACHE/bin"
	log "built runc $RUNC_VERSION in $((SECONDS - start)) s"
}

mkdir -p "$RUNC_CACHE" 2>/dev/null || die "cannot create the build cache $RUNC_CACHE (set PODSTEP_CACHE_DIR to a writable folder)"
(
	flock 9
	if runc_works; then
		log "runc $RUNC_VERSION: cached in $RUNC_CACHE/bin"
	else
		build_runc
	fi
) 9>"$RUNC_CACHE/.lock"
runc_works || die "$RUNC_BIN: missing, or not runc $RUNC_VERSION with seccomp (build log: $RUNC_CACHE/build.log)"
log "$RUNC_BIN"
