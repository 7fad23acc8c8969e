#!/usr/bin/env bash
# Build podstep's release archives: linux and darwin, amd64 and arm64, with the version stamped
# (-X main.version), -trimpath, no cgo; one podstep_VERSION_OS_ARCH.tar.gz each (the binary, LICENSE
# if any, README.md) and checksums.txt (sha256). Nothing is published.
#
#   bash hack/release.sh [--snapshot] [VERSION] [OUTDIR]
#
# PODSTEP_RELEASE_TARGETS="OS/ARCH ..." builds only those (of the four).
# VERSION defaults to `git describe --tags --always --dirty` (v-prefix kept); OUTDIR to dist/.
# --snapshot (CI, hack/test.sh): VERSION is VERSION-snapshot, OUTDIR a temp dir removed at the end,
# and the host's binary is run to check the stamped version.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
if [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi

snapshot=0
if [ "${1:-}" = "--snapshot" ]; then
	snapshot=1
	shift
fi
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)}
out=${2:-dist}
if [ "$snapshot" = 1 ]; then
	version="$version-snapshot"
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
case "$version" in
*[!A-Za-z0-9._+-]*)
	echo "hack/release.sh: version $version: letters, digits and . _ + - only" >&2
	exit 2
	;;
esac
mkdir -p "$out"

# PODSTEP_RELEASE_TARGETS: fewer of them (hack/test.sh's snapshot: linux/amd64 and darwin/amd64).
read -r -a targets <<<"${PODSTEP_RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
for t in "${targets[@]}"; do
	case $t in
	linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64) ;;
	*)
		echo "hack/release.sh: PODSTEP_RELEASE_TARGETS: unknown target '$t' (known: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)" >&2
		exit 2
		;;
	esac
done
for t in "${targets[@]}"; do
	os=${t%/*} arch=${t#*/}
	name="podstep_${version}_${os}_${arch}"
	mkdir -p "$out/$name"
	echo "building $name"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X main.version=$version" -o "$out/$name/podstep" ./cmd/podstep
	cp README.md "$out/$name/"
	if [ -f LICENSE ]; then cp LICENSE "$out/$name/"; fi
	tar -C "$out" --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
done
(cd "$out" && sha256sum ./*.tar.gz | sed 's| \./| |' >checksums.txt)
cat "$out/checksums.txt"

# The host's binary says the version it was stamped with.
host="$out/podstep_${version}_$(go env GOOS)_$(go env GOARCH)/podstep"
if [ -x "$host" ]; then
	got=$("$host" version | head -1)
	if [ "$got" != "podstep $version" ]; then
		echo "hack/release.sh: $host version says '$got', want 'podstep $version'" >&2
		exit 1
	fi
	echo "ok: $got"
fi
(cd "$out" && sha256sum --quiet -c checksums.txt)
if [ "$snapshot" = 0 ]; then
	echo "release archives in $out"
fi
