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
CACHE=${PODSTEP_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podstep}/etcd-$ETCD_VERSION
BIN=$CACHE/bin/etcd

log() { printf 'etcd-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# works: the cached binary runs and names the pinned version.
# (Its output read whole first: grep -q stopping early would SIGPIPE etcd, failing under pipefail.)
works() {
	local out
	[ -x "$BIN" ] && out=$("$BIN" --version 2>/dev/null) && grep -qx "etcd Version: ${ETCD_VERSION#v}" <<<"$out"
}

build() {
	local go tmp=$CACHE/bin.new out=$CACHE/build.log start=$SECONDS
	go=$(command -v go || true)
	[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
	[ -n "$go" ] || die "building etcd needs go: no go toolchain in PATH or /usr/local/go/bin"
	log "building etcd $ETCD_VERSION from the Go module proxy into $CACHE/bin (about a minute or two the first time; log $out)"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# GitSHA as etcd's release builds stamp it (scripts/build-binary.sh), with the tag: without it
	# --version says "Git SHA: Not provided (use ./build instead of go build)".
	if ! (cd "$HERE/etcd" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$go" build -trimpath -o "$tmp/etcd" \
		-ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
		go.etcd.io/etcd/server/v3) >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -rf "$tmp"
		die "go build of etcd $ETCD_VERSION failed (log: $out)"
	fi
	rm -rf "${CACHE:?}/bin"
	mv "$tmp" "$CACHE/bin"
	log "built etcd $ETCD_VERSION in $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

mkdir -p "$CACHE" 2>/dev/null || die "cannot create the build cache $CACHE (set PODSTEP_CACHE_DIR to a writable folder)"
(
	flock 9
	works || build
	works || die "$BIN does not say etcd Version: ${ETCD_VERSION#v} after the build: $("$BIN" --version 2>&1 | head -n 1)"
) 9>"$CACHE/.lock"
echo "$BIN"
