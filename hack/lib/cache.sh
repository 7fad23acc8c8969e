# shellcheck shell=bash
# hack/lib/cache.sh: the build cache every hack/*-build.sh script (and lint.sh's golangci-lint,
# containerd-up.sh's containerd 2, image-build.sh's image) shares. Sourced; the sourcing script
# defines log MESSAGE and die MESSAGE (its own prefix, stream and exit status).
#
#   cache_dir NAME        prints ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/NAME
#   find_go WHAT          sets GO to the go toolchain (PATH, else /usr/local/go/bin/go), or dies
#                         "WHAT needs go: ..."
#   cached CACHE WORKS BUILD WHAT
#                         under CACHE/.lock (two callers at once build once): unless the command
#                         WORKS succeeds, runs BUILD; logs "WHAT: cached in CACHE/bin" when it
#                         did not have to build; after the lock, dies unless WORKS succeeds.
#   build_bin CACHE WHAT NOTE COMPILE
#                         the usual BUILD: logs "building WHAT ... (NOTE; log CACHE/build.log)",
#                         runs COMPILE DIR (a function that writes the binaries into DIR, a fresh
#                         CACHE/bin.new) with its output in CACHE/build.log, and on success
#                         replaces CACHE/bin with DIR; on failure shows the log's tail and dies.
#   PINNED_GCFLAGS        the go build flag every pinned build passes (below)
#   apt_need PACKAGE...   apt-get install the packages (apt-get update first only when the
#                         install fails), quietly; shows apt's output and dies when it fails.

# PINNED_GCFLAGS: how every pinned build compiles (the kubelet, the control plane, etcd, containerd 2,
# runc, Jaeger, ...): without inlining. Cold, that is 28% less CPU (etcd v3.6.16 on 2 cores: 48
# CPU-s against 66) for binaries whose speed no test measures; the test command's cold run is bound
# by its CPU (docs/measurements.md). Their behaviour is the same: inlining is an optimisation.
# (Not podstep's own builds, nor golangci-lint, whose run is the bigger part of its CPU.)
# shellcheck disable=SC2034 # read by the scripts that source this file
PINNED_GCFLAGS=-gcflags=all=-l

cache_dir() { printf '%s/%s\n' "${PODSTEP_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podstep}" "$1"; }

GO=
find_go() {
	GO=$(command -v go || true)
	[ -n "$GO" ] || [ ! -x /usr/local/go/bin/go ] || GO=/usr/local/go/bin/go
	[ -n "$GO" ] || die "$1 needs go: no go toolchain in PATH or /usr/local/go/bin"
}

# The lock is held by a subshell: a process started later by the caller (containerd) must not
# inherit the lock's file descriptor.
cached() {
	local cache=$1 works=$2 build=$3 what=$4
	mkdir -p "$cache" 2>/dev/null || die "cannot create the build cache $cache (set PODSTEP_CACHE_DIR to a writable folder)"
	(
		flock 9
		if "$works"; then
			log "$what: cached in $cache/bin"
		else
			"$build"
		fi
	) 9>"$cache/.lock" || exit $?
	"$works" || die "$cache/bin: $what missing or not the pinned version after the build (build log: $cache/build.log)"
}

build_bin() {
	local cache=$1 what=$2 note=$3 compile=$4 tmp=$1/bin.new out=$1/build.log start=$SECONDS
	log "building $what from the Go module proxy into $cache/bin ($note; log $out)"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! "$compile" "$tmp" >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -rf "$tmp"
		die "go build of $what failed (log: $out)"
	fi
	rm -rf "${cache:?}/bin"
	mv "$tmp" "$cache/bin"
	log "built $what in $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

apt_need() {
	local out
	out=$(mktemp)
	if ! { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" ||
		{ apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@"; }; } >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		die "apt-get install $* failed"
	fi
	rm -f "$out"
}
