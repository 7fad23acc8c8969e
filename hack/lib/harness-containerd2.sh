# shellcheck shell=bash
# hack/lib/harness-containerd2.sh: containerd v2.4.2 (PODSTEP_CONTAINERD=2), built from the Go module proxy
# once into $C2_CACHE/bin (hack/lib/cache.sh; C2_CACHE from hack/harness-env.sh).
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

C2_MODULE=github.com/containerd/containerd/v2

# containerd2_works: the cached containerd, ctr and shim are there and say they are the pinned
# version (a cache from another build, or half written, is rebuilt).
containerd2_works() {
	local b
	for b in containerd ctr containerd-shim-runc-v2; do
		[ -x "$C2_CACHE/bin/$b" ] || return 1
	done
	[[ $("$C2_CACHE/bin/containerd" --version 2>/dev/null) == *" $CONTAINERD2_VERSION "* ]] &&
		[[ $("$C2_CACHE/bin/ctr" --version 2>/dev/null) == *" $CONTAINERD2_VERSION" ]] &&
		[[ $("$C2_CACHE/bin/containerd-shim-runc-v2" -v 2>/dev/null) == *"Version:  $CONTAINERD2_VERSION"* ]]
}

# compile_containerd2 DIR: go install the three binaries into DIR. -tags no_btrfs: no btrfs
# headers needed (the snapshotter is not used). The version is stamped the way containerd's
# release builds do (-X .../version.Version), so that CRI Version answers "v2.4.2" as a released
# containerd does, not the source default "2.4.2+unknown". CGO_ENABLED=1 whatever the caller's
# (hack/test.sh exports 0 for podstep's own compiles).
compile_containerd2() (
	cd / && GOWORK=off GOBIN=$1 CGO_ENABLED=1 "$GO" install "$PINNED_GCFLAGS" -tags no_btrfs \
		-ldflags "-X $C2_MODULE/version.Version=$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/containerd@$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/containerd-shim-runc-v2@$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/ctr@$CONTAINERD2_VERSION"
)
build_containerd2() {
	find_go "PODSTEP_CONTAINERD=2 (building containerd $CONTAINERD2_VERSION)"
	build_bin "$C2_CACHE" "containerd $CONTAINERD2_VERSION (containerd, containerd-shim-runc-v2, ctr)" \
		"about 3 min the first time" compile_containerd2
}

# ensure_containerd2: the binaries, from the cache or built (hack/lib/cache.sh: under a lock, so
# that two harnesses starting at once build once).
ensure_containerd2() {
	[ "$RUNTIME" = 2 ] || return 0
	cached "$C2_CACHE" containerd2_works build_containerd2 "containerd $CONTAINERD2_VERSION"
}

# ensure_runc: the containerd 2 harness runs its pods with runc built from the Go module proxy
# (hack/runc-build.sh, cached): user namespaces need runc >= 1.2 (idmapped mounts), Debian's is
