#!/usr/bin/env bash
# Build the runner image of `podstep fleet`: an OCI image holding the static podstep binary, with
# no registry involved (an OCI image layout and its tarball), and optionally import it into one or
# more containerd instances (each test node's runtime):
#
#   bash hack/image-build.sh                          build (or reuse), print the image name last
#   bash hack/image-build.sh --import SOCK [--import SOCK2 ...]
#                                                     also `ctr -n k8s.io images import` it into the
#                                                     containerd serving SOCK (a path or unix://path)
#
# The binary is built from this checkout with CGO_ENABLED=0 -trimpath (static: the image has no
# libc, nothing but /usr/local/bin/podstep and an empty /tmp). The image is cached by the binary's
# SHA-256, so an unchanged binary gives the same image and name, and a changed one a new name:
#
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/image/<sha256>/layout/     the OCI image layout (tag "bin-<12 hex>")
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/image/<sha256>/image.tar   the same layout as a tarball
#
# Image name (last line of stdout): ${PODSTEP_IMAGE_REPO:-localhost/podstep}:bin-<12 hex of the sha256>.
# `podstep fleet --image NAME` runs it with imagePullPolicy IfNotPresent: imported here, or pushed to
# a registry the nodes pull from (docs/fleet.md: skopeo copy oci:LAYOUT:TAG docker://REGISTRY/...).
# Variables: PODSTEP_CACHE_DIR, PODSTEP_IMAGE_REPO, PODSTEP_CTR (the ctr binary to import with,
# default `ctr` in PATH: use the ctr of the containerd you import into), GOARCH.
# Needs umoci (Debian package, installed when missing).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir image)
IMAGE_REPO=${PODSTEP_IMAGE_REPO:-localhost/podstep}
CTR=${PODSTEP_CTR:-ctr}

log() { printf '%s\n' "$*" >&2; }
die() {
	printf 'image-build: %s\n' "$*" >&2
	exit 1
}

imports=()
while [ $# -gt 0 ]; do
	case $1 in
	--import)
		[ $# -ge 2 ] || die "--import needs a containerd socket"
		imports+=("${2#unix://}")
		shift 2
		;;
	--import=*)
		imports+=("${1#--import=}")
		imports[-1]=${imports[-1]#unix://}
		shift
		;;
	-h | --help)
		sed -n '2,22p' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*) die "unknown argument $1 (expected --import SOCK)" ;;
	esac
done
[[ $IMAGE_REPO =~ ^[a-z0-9][a-z0-9._/:-]*$ ]] || die "PODSTEP_IMAGE_REPO=$IMAGE_REPO: expected an image repository such as localhost/podstep"

if ! command -v umoci >/dev/null; then
	log "installing: umoci (OCI image layouts)"
	apt_need umoci
fi
find_go "building podstep's image"
go=$GO

mkdir -p "$CACHE"
bin=$(mktemp "$CACHE/podstep.XXXXXX")
trap 'rm -f "$bin"' EXIT
(cd "$REPO_ROOT" && CGO_ENABLED=0 "$go" build -trimpath -o "$bin" ./cmd/podstep) || die "go build ./cmd/podstep failed"
if command -v file >/dev/null && ! file "$bin" | grep -q 'statically linked'; then
	die "the podstep binary is not static: $(file "$bin")"
fi
sum=$(sha256sum "$bin" | cut -d' ' -f1)
tag=bin-${sum:0:12}
name=$IMAGE_REPO:$tag
dir=$CACHE/$sum

if [ ! -f "$dir/image.tar" ]; then
	exec 9>"$CACHE/.lock"
	flock 9
	if [ ! -f "$dir/image.tar" ]; then
		tmp=$CACHE/$sum.new
		rm -rf "$tmp"
		mkdir -p "$tmp"
		umoci init --layout "$tmp/layout"
		umoci new --image "$tmp/layout:$tag"
		umoci unpack --rootless --image "$tmp/layout:$tag" "$tmp/bundle" >/dev/null
		install -D -m 0755 "$bin" "$tmp/bundle/rootfs/usr/local/bin/podstep"
		install -d -m 1777 "$tmp/bundle/rootfs/tmp"
		umoci repack --image "$tmp/layout:$tag" "$tmp/bundle" >/dev/null
		umoci config --image "$tmp/layout:$tag" --os linux --architecture "$("$go" env GOARCH)" \
			--config.env PATH=/usr/local/bin:/usr/bin:/bin --config.workingdir / \
			--config.entrypoint /usr/local/bin/podstep \
			--config.label "org.opencontainers.image.title=podstep" \
			--config.label "dev.podstep.binary.sha256=$sum"
		umoci gc --layout "$tmp/layout"
		rm -rf "$tmp/bundle"
		tar -C "$tmp/layout" -cf "$tmp/image.tar" .
		rm -rf "$dir"
		mv "$tmp" "$dir"
		log "built $name: OCI layout $dir/layout, tarball $dir/image.tar"
	fi
	flock -u 9
else
	log "reusing $name (cached by the binary's sha256 in $dir)"
fi

for sock in "${imports[@]}"; do
	[ -S "$sock" ] || die "--import $sock: not a socket"
	# the layout's tag is the part after ':'; --base-name supplies the repository.
	"$CTR" -a "$sock" -n k8s.io images import --base-name "$IMAGE_REPO" --digests "$dir/image.tar" >/dev/null ||
		die "ctr images import into $sock failed"
	# grep reads the whole list: with pipefail, grep -q's early exit fails ctr with SIGPIPE.
	"$CTR" -a "$sock" -n k8s.io images ls -q | grep -xF "$name" >/dev/null || die "import into $sock did not produce $name"
	log "imported $name into $sock (namespace k8s.io)"
done
echo "$name"
