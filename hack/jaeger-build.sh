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
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "jaeger-$JAEGER_VERSION")
BIN=$CACHE/bin/jaeger

log() { printf '%s\n' "$*"; }
die() {
	printf 'jaeger-build: %s\n' "$*" >&2
	exit 1
}

# works: the cached binary runs and names the pinned version.
works() { [ -x "$BIN" ] && "$BIN" version 2>/dev/null | grep -q "\"gitVersion\": *\"$JAEGER_VERSION\""; }

# compile DIR: the version stamp where Jaeger's release builds put it
# (scripts/makefiles/BuildInfo.mk), with the module's version: `jaeger version` then says
# "gitVersion": "v1.76.0", which works() checks.
compile() (
	pkg=github.com/jaegertracing/jaeger
	cd "$HERE/jaeger" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" -o "$1/jaeger" \
		-ldflags "-s -w -X $pkg/internal/version.latestVersion=$JAEGER_VERSION -X $pkg/internal/version.commitSHA=$JAEGER_VERSION -X $pkg/internal/version.date=1970-01-01T00:00:00Z" \
		"$pkg/cmd/jaeger"
)
build() {
	find_go "building jaeger"
	build_bin "$CACHE" "jaeger $JAEGER_VERSION" "several minutes the first time: 17 min on a busy 2-core machine" compile
}

cached "$CACHE" works build "jaeger $JAEGER_VERSION"
printf '%s\n' "$BIN"
