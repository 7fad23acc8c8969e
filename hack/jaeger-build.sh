#!/usr/bin/env bash
# Build Jaeger v2 (cmd/jaeger of github.com/jaegertracing/jaeger), the OTLP receiver of the
# tracing tests, once, from the Go module proxy, into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/jaeger-v1.76.0/bin/jaeger
# and print that path as the last line of stdout:  JAEGER=$(hack/jaeger-build.sh | tail -1)
#
# Jaeger's go.mod has a replace line, so `go install ...@v1.76.0` refuses it; hack/jaeger/ is a
# wrapper module that requires it, repeats the replace, and names cmd/jaeger as its tool. Its
# go.sum pins every module (-mod=readonly: a clone's files are never changed): the build needs the
# Go module proxy, not the checksum database.
# Reused while the cached binary says v1.76.0; built under a lock (two harnesses, one build).
# See hack/README.md, "Jaeger".
set -euo pipefail

JAEGER_VERSION=v1.76.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${PODSTEP_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podstep}/jaeger-$JAEGER_VERSION
BIN=$CACHE/bin/jaeger

log() { printf '%s\n' "$*"; }
die() {
	printf 'jaeger-build: %s\n' "$*" >&2
	exit 1
}

# works: the cached binary runs and names the pinned version.
works() { [ -x "$BIN" ] && "$BIN" version 2>/dev/null | grep -q "\"gitVersion\": *\"$JAEGER_VERSION\""; }

build() {
	local go tmp=$CACHE/bin.new out=$CACHE/build.log start=$SECONDS pkg=github.com/jaegertracing/jaeger
	go=$(command -v go || true)
	[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
	[ -n "$go" ] || die "no go toolchain in PATH or /usr/local/go/bin"
	log "building jaeger $JAEGER_VERSION from the Go module proxy into $CACHE/bin (several minutes the first time: 17 min on a busy 2-core machine; log $out)"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# The version stamp where Jaeger's release builds put it (scripts/makefiles/BuildInfo.mk), with
	# the module's version: `jaeger version` then says "gitVersion": "v1.76.0", which works() checks.
	if ! (cd "$HERE/jaeger" && GOWORK=off GOFLAGS=-mod=readonly "$go" build -trimpath -o "$tmp/jaeger" \
		-ldflags "-s -w -X $pkg/internal/version.latestVersion=$JAEGER_VERSION -X $pkg/internal/version.commitSHA=$JAEGER_VERSION -X $pkg/internal/version.date=1970-01-01T00:00:00Z" \
		"$pkg/cmd/jaeger") >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -rf "$tmp"
		die "go build of jaeger $JAEGER_VERSION failed (log: $out)"
	fi
	rm -rf "${CACHE:?}/bin"
	mv "$tmp" "$CACHE/bin"
	log "built jaeger $JAEGER_VERSION in $((SECONDS - start)) s"
}

mkdir -p "$CACHE" 2>/dev/null || die "cannot create the build cache $CACHE (set PODSTEP_CACHE_DIR to a writable folder)"
(
	flock 9
	if works; then
		log "jaeger $JAEGER_VERSION: cached in $CACHE/bin"
	else
		build
	fi
) 9>"$CACHE/.lock" || exit 1
works || die "$BIN is missing or not $JAEGER_VERSION (build log: $CACHE/build.log)"
printf '%s\n' "$BIN"
