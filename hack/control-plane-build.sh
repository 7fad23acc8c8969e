#!/usr/bin/env bash
# control-plane-build.sh: the Kubernetes v1.37.0 control plane for podstep's cluster tests
# (hack/cluster-up.sh), built once from the Go module proxy out of the kubelet's wrapper module
# (hack/kubelet/go.mod: k8s.io/kubernetes v1.37.0, staging modules replaced by their published
# v0.37.0, one `tool` line per command) into
#   ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/kubernetes-v1.37.0/bin/{kube-apiserver,kube-controller-manager,kube-scheduler}
# Each binary is reused while its --version names v1.37.0; only the missing ones are built.
#
#   bash hack/control-plane-build.sh [COMMAND...]
#
# COMMANDs: those instead (of kube-apiserver kube-controller-manager kube-scheduler kubectl), into
# the same folder: `bash hack/control-plane-build.sh kubectl` for a kubectl of the cluster's version
# (cluster-up.sh needs none: its checks use curl; cold, kubectl is ~2 min of compiling on 2 cores
# the test command would spend for nothing).
# Prints the bin folder as its last line. Under a lock: two callers at once build once.
# Log: .../kubernetes-v1.37.0/build.log (one section per command, with its time).
# (The kubelet is hack/kubelet-build.sh's, cached on its own: the proxy tests need only it.)
set -euo pipefail

K8S_VERSION=v1.37.0
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cache.sh
. "$HERE/lib/cache.sh"
CACHE=$(cache_dir "kubernetes-$K8S_VERSION")
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler)
if [ $# -gt 0 ]; then
	for c in "$@"; do
		case $c in
		kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) ;;
		*)
			printf 'control-plane-build: unknown command %q (known: kube-apiserver kube-controller-manager kube-scheduler kubectl)\n' "$c" >&2
			exit 2
			;;
		esac
	done
	COMMANDS=("$@")
fi

log() { printf 'control-plane-build: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# works NAME: the cached binary runs and names the pinned version.
works() {
	local bin=$CACHE/bin/$1 v
	[ -x "$bin" ] || return 1
	if [ "$1" = kubectl ]; then
		v=$("$bin" version --client 2>/dev/null | head -n 1)
		[ "$v" = "Client Version: $K8S_VERSION" ]
	else
		v=$("$bin" --version 2>/dev/null)
		[ "$v" = "Kubernetes $K8S_VERSION" ]
	fi
}
works_all() {
	local name
	for name in "${COMMANDS[@]}"; do works "$name" || return 1; done
}

build() { # build NAME
	local name=$1 out=$CACHE/build.log start=$SECONDS pkg=k8s.io/component-base/version
	find_go "building $name"
	log "building $name $K8S_VERSION from the Go module proxy into $CACHE/bin (minutes the first time; log $out)"
	mkdir -p "$CACHE/bin"
	rm -f "$CACHE/bin/.$name.new"
	printf '=== %s %s (%s, load %s)\n' "$name" "$K8S_VERSION" "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
	# The version is stamped as Kubernetes' release builds do (hack/lib/version.sh): --version
	# says v1.37.0, and kubectl can parse the server's and its own version (v0.0.0-master fails).
	if ! (cd "$HERE/kubelet" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 "$GO" build -trimpath "$PINNED_GCFLAGS" -o "$CACHE/bin/.$name.new" \
		-ldflags "-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean" \
		"k8s.io/kubernetes/cmd/$name") >>"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -f "$CACHE/bin/.$name.new"
		die "go build of $name $K8S_VERSION failed (log: $out)"
	fi
	mv -f "$CACHE/bin/.$name.new" "$CACHE/bin/$name"
	printf '=== %s built in %d s (load %s)\n' "$name" $((SECONDS - start)) "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
	log "built $name $K8S_VERSION in $((SECONDS - start)) s"
}
# build_missing: only the commands whose cached binary is missing or another version.
build_missing() {
	local name
	for name in "${COMMANDS[@]}"; do works "$name" || build "$name"; done
}

cached "$CACHE" works_all build_missing "${COMMANDS[*]} $K8S_VERSION"
echo "$CACHE/bin"
