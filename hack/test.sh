#!/usr/bin/env bash
# podstep's one test command:  bash hack/test.sh
#
#   0. the linters (hack/lint.sh): golangci-lint (pinned, built once and cached) and shellcheck
#   1. go vet (all packages, and the integration package with its build tag); gofmt -l; go mod tidy -diff
#   2. go test ./...                     unit tests; then the late checks: hack/fuzz.sh and go test -race
#      on the concurrent packages (as root in the background beside 3 and 4, whose suites leave the
#      CPU mostly idle; their output and results come before the summary)
#   3. as root: the integration suite against a real containerd and a private registry, once per
#      runtime: Debian's containerd 1.6, then containerd 2.4.2 (PODSTEP_CONTAINERD=1.6 / 2)
#        go build -o $TMP/podstep ./cmd/podstep  →  hack/jaeger-up.sh (Jaeger v2, built once and
#        cached, for the tracing tests)  →  for each runtime: hack/containerd-up.sh
#        →  go test -count=1 -tags integration ./test/integration/ -v
#        →  hack/containerd-down.sh (always, from a trap)
#   4. as root: the cluster suite against a real Kubernetes v1.37.0 cluster: both harnesses up, then
#      hack/cluster-up.sh (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and two
#      nodes: a kubelet on each harness; built once and cached), two more harnesses no kubelet
#      watches (the replay runtimes, containerd 1.6 and 2) → go test -count=1 -tags cluster
#      ./test/cluster/ -v → hack/cluster-down.sh and all four harnesses down (always, from the trap)
#
# Not root: the integration suite is SKIPPED (loudly) and the exit status is the unit tests'.
# CI=true: not being root, a harness (of either runtime) that does not come up, a runtime left out
# (PODSTEP_TEST_RUNTIMES), the cluster phase left out (PODSTEP_TEST_CLUSTER=0) or a cluster that
# does not come up FAILS the run. A harness that does not come up always fails it.
# Exit status: non-zero when any part failed.
set -uo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT" || exit 2
if [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null 2>&1 || {
	echo "hack/test.sh: no go toolchain in PATH (expected /usr/local/go/bin/go)" >&2
	exit 2
}
CI=${CI:-}
# One build configuration for podstep's own compiles: the linters' package loading, vet, the unit
# and integration tests, the harnesses' binaries and the release's linux/amd64 build all compile with
# CGO_ENABLED=0 and -trimpath (as hack/release.sh does), so each dependency is compiled once for them
# all; cold, every configuration is ~4-5 min of compiling on 2 cores. (The race run needs cgo: its own.)
# The pinned builds set their own CGO_ENABLED and flags.
export CGO_ENABLED=0
[[ " ${GOFLAGS:-} " == *" -trimpath "* ]] || export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"

declare -a RESULTS=()
FAILED=0
# Each section's header says when it began (wall clock, and seconds since the start): a cold run's
# phases are read off the log.
# (The background late checks are this script again: they count from its start too.)
export PODSTEP_TEST_T0=${PODSTEP_TEST_T0:-$(date +%s)}
section() { printf '\n=== %s  [%s, +%d s]\n' "$*" "$(date +%T)" "$(($(date +%s) - PODSTEP_TEST_T0))"; }
record() { # record NAME STATUS
	if [ "$2" = 0 ]; then
		RESULTS+=("ok      $1")
	else
		RESULTS+=("FAILED  $1 (exit $2)")
		FAILED=1
	fi
}
# gotest LOG CMD...: a go test command, its output also kept in LOG; its exit status.
gotest() {
	local log=$1
	shift
	"$@" 2>&1 | tee "$log"
	return "${PIPESTATUS[0]}"
}
# failed_tests LOG: "; failed: TestA/sub, TestB, pkg": the tests that failed in LOG, the innermost
# subtest of each (a parent fails with any of its subtests), then the packages, for the summary (the
# end of CI's log is often all that is shown of a run).
failed_tests() {
	local names
	names=$(sed -n -e 's/^ *--- FAIL: \([^ ]*\).*/\1/p' -e 's/^FAIL\t\([^\t ]*\).*/\1/p' "$1" 2>/dev/null |
		awk '!seen[$0]++ { n[++k] = $0 }
			END { for (i = 1; i <= k; i++) { keep = 1
				for (j = 1; j <= k; j++) if (index(n[j], n[i] "/") == 1) keep = 0
				if (keep) print n[i] } }' | head -n 12 | paste -sd, - | sed 's/,/, /g')
	if [ -n "$names" ]; then printf '; failed: %s' "$names"; fi
}
banner() { # banner WORD TEXT...
	local word=$1
	shift
	printf '\n'
	printf '!%.0s' {1..78}
	printf '\n!!! %s: %s\n' "$word" "$*"
	printf '!%.0s' {1..78}
	printf '\n'
}
finish() {
	late_collect
	if [ -n "$PREBUILD_PID" ]; then
		section "background builds (hack/prebuild.sh)"
		prebuild_stop
	fi
	section "summary"
	printf '  %s\n' "${RESULTS[@]}"
	if [ "$FAILED" = 0 ]; then
		echo "hack/test.sh: PASS"
		exit 0
	fi
	echo "hack/test.sh: FAIL"
	exit 1
}

# The late checks: the fuzz targets (manifest loading, recordings, the sanitiser: briefly, seeded
# from testdata: no panic, always exit 2) and the packages with goroutines (the engine and its
# actions, the TUI, the pod state tracker, the CRI client and its hooks, the simulated runtime,
# bench's pod workers, the signal handling in cmd, tracing, the proxy, watch) again under the race
# detector. CPU-bound, and they need no runtime: as root they run in the background beside the
# suites, which wait on the runtimes and leave the CPU ~80% idle (measured cold: 17% busy); not
# root, in the foreground. late_checks RESULTS: each check's exit status and name, a line each.
RACE_PKGS=(./internal/steps ./internal/tui ./internal/podstate ./internal/cri ./internal/sim ./internal/bench ./cmd/podstep ./internal/trace ./internal/proxy ./internal/watch)
late_checks() {
	section "fuzz (hack/fuzz.sh)"
	bash hack/fuzz.sh
	printf '%s\t%s\n' $? "fuzz (hack/fuzz.sh, 10 s per target)" >>"$1"
	section "go test -race ${RACE_PKGS[*]}"
	local log rc
	log=$(mktemp /tmp/podstep-race.XXXXXX)
	CGO_ENABLED=1 gotest "$log" go test -race "${RACE_PKGS[@]}"
	rc=$?
	printf '%s\t%s\n' $rc "go test -race (concurrent packages)$(failed_tests "$log")" >>"$1"
	rm -f "$log"
}
if [ "${1:-}" = --late-checks ]; then # the background job's own run (late_start)
	late_checks "$2"
	exit 0
fi
# late_record RESULTS: record each line of a late_checks results file.
late_record() {
	local rc name
	while IFS=$'\t' read -r rc name; do record "$name" "$rc"; done <"$1"
}

# The pinned binaries built from the Go module proxy (hack/prebuild.sh: the kubelet, the mock CSI
# driver, Jaeger, containerd 2 and runc, etcd, the control plane, local-path-provisioner), in the background from the start at the lowest
# CPU priority: cold, they take the CPU the lint and unit phases leave idle; warm, seconds. Only as
# root (the phases that use them need root). PODSTEP_PREBUILD=0: each is built by its phase.
PREBUILD_PID=
PREBUILD_LOG=
if [ "$(id -u)" = 0 ] && [ "${PODSTEP_PREBUILD:-1}" != 0 ]; then
	PREBUILD_LOG=$(mktemp /tmp/podstep-prebuild.XXXXXX)
	nice -n 19 setsid bash hack/prebuild.sh >"$PREBUILD_LOG" 2>&1 &
	PREBUILD_PID=$!
fi
# prebuild_stop: stops the background builds if they still run (their process group), and shows
# what they did.
prebuild_stop() {
	[ -n "$PREBUILD_PID" ] || return 0
	kill -- -"$PREBUILD_PID" 2>/dev/null && echo "hack/test.sh: stopped the background builds (hack/prebuild.sh)" >&2
	wait "$PREBUILD_PID" 2>/dev/null
	sed 's/^/  /' "$PREBUILD_LOG"
	rm -f "$PREBUILD_LOG"
	PREBUILD_PID=
}
# late_start: the late checks in the background at the lowest CPU priority (their own process
# group; output and results in temp files), and the pinned builds still running raised to nice 10
# above them: from here the suites wait for those builds, not for the checks.
LATE_PID=
LATE_LOG=
LATE_RESULTS=
late_start() {
	LATE_LOG=$(mktemp /tmp/podstep-late-log.XXXXXX)
	LATE_RESULTS=$(mktemp /tmp/podstep-late.XXXXXX)
	nice -n 19 setsid bash "$REPO_ROOT/hack/test.sh" --late-checks "$LATE_RESULTS" >"$LATE_LOG" 2>&1 </dev/null &
	LATE_PID=$!
	echo "hack/test.sh: fuzz and race in the background beside the suites (nice 19; their output comes before the summary)"
	if [ -n "$PREBUILD_PID" ]; then renice -n 10 -g "$PREBUILD_PID" >/dev/null 2>&1 || true; fi
}
# late_collect: waits for the late checks, shows their output and records their results (a check
# that did not report is a failure).
late_collect() {
	[ -n "$LATE_PID" ] || return 0
	section "fuzz and race (run in the background beside the suites)"
	local start=$SECONDS
	wait "$LATE_PID"
	[ $((SECONDS - start)) -lt 2 ] || echo "hack/test.sh: waited $((SECONDS - start)) s for them after the suites"
	sed 's/^/  /' "$LATE_LOG"
	late_record "$LATE_RESULTS"
	[ "$(wc -l <"$LATE_RESULTS")" = 2 ] || record "fuzz and race: ran to their end (each reports its status)" 1
	rm -f "$LATE_LOG" "$LATE_RESULTS"
	LATE_PID=
}
# late_stop: on an early exit, stops them (their process group).
# shellcheck disable=SC2317 # called from the EXIT trap, which shellcheck does not follow
late_stop() {
	[ -n "$LATE_PID" ] || return 0
	kill -- -"$LATE_PID" 2>/dev/null && echo "hack/test.sh: stopped the background fuzz and race run" >&2
	wait "$LATE_PID" 2>/dev/null
	rm -f "$LATE_LOG" "$LATE_RESULTS"
	LATE_PID=
}
trap 'prebuild_stop; late_stop' EXIT
trap 'echo "hack/test.sh: interrupted" >&2; exit 130' INT TERM

# --- 0. lint -----------------------------------------------------------------------------------
# golangci-lint v2.15.0 (.golangci.yml; built once from the Go module proxy into
# ~/.cache/podstep/golangci-lint-v2.15.0) and shellcheck on hack/*.sh and .ci/run. A finding fails the run.
section "hack/lint.sh go (golangci-lint)"
bash hack/lint.sh go
record "golangci-lint (hack/lint.sh go)" $?
section "hack/lint.sh shell (shellcheck)"
bash hack/lint.sh shell
record "shellcheck (hack/lint.sh shell)" $?

# --- 1. vet ------------------------------------------------------------------------------------
section "go vet ./..."
go vet ./...
record "go vet ./..." $?
section "go vet -tags integration ./test/integration/"
go vet -tags integration ./test/integration/
record "go vet -tags integration ./test/integration/" $?
section "go vet -tags cluster ./test/cluster/"
go vet -tags cluster ./test/cluster/
record "go vet -tags cluster ./test/cluster/" $?

# Replay runs anywhere: everything but the runtime side builds for macOS too. -trimpath and no cgo
# as hack/release.sh builds, so the release's darwin/amd64 build below reuses these compiles.
section "GOOS=darwin go build ./..."
GOOS=darwin go build ./...
record "GOOS=darwin go build ./... (replay runs on macOS)" $?

# The release build (version stamped, checksums), not published, for the two platforms whose
# compiles the phases above already made: linux/amd64 (vet's and the tests') and darwin/amd64 (the
# darwin build's). The arm64 builds would add two build configurations (~5 min each cold on 2
# cores) and check nothing of podstep's own code, which has no per-architecture file;
# `bash hack/release.sh` builds all four.
section "hack/release.sh --snapshot (linux/amd64 darwin/amd64)"
PODSTEP_RELEASE_TARGETS="linux/amd64 darwin/amd64" bash hack/release.sh --snapshot
record "release snapshot (hack/release.sh --snapshot: linux/amd64 and darwin/amd64, checksums, stamped version)" $?

section "gofmt -l"
mapfile -t gofiles < <(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
unformatted=$(gofmt -l "${gofiles[@]}")
if [ -n "$unformatted" ]; then
	printf 'gofmt would change:\n%s\n' "$unformatted"
	record "gofmt -l (every Go file formatted)" 1
else
	record "gofmt -l (every Go file formatted)" 0
fi

section "go mod tidy -diff"
go mod tidy -diff
record "go mod tidy -diff (go.mod and go.sum are tidy)" $?

# --- 2. unit tests -----------------------------------------------------------------------------
# internal/live's TestPageFoldsPodDelta runs the page's fold (live.js) in node; with CI=true a
# missing node fails it, so install it (as root; otherwise the test skips, loudly).
if ! command -v node >/dev/null && [ "$(id -u)" = 0 ]; then
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq nodejs >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq nodejs >/dev/null 2>&1; } ||
		echo "hack/test.sh: could not install nodejs; internal/live's fold test will fail under CI=true"
fi
# internal/volume's TestLocalBlockDevice and the integration suite's TestLocalBlockDeviceVolume
# format and mount a loop device as the kubelet's local volume plugin does: losetup and mount
# (mount), blkid and fsck (util-linux), mkfs.ext4 (e2fsprogs). Installed when missing (as root).
for tool in losetup:mount mount:mount blkid:util-linux fsck:util-linux mkfs.ext4:e2fsprogs; do
	if ! PATH=$PATH:/sbin:/usr/sbin command -v "${tool%%:*}" >/dev/null && [ "$(id -u)" = 0 ]; then
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${tool#*:}" >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${tool#*:}" >/dev/null 2>&1; } ||
			echo "hack/test.sh: could not install ${tool#*:}; the local block-device volume tests will fail"
	fi
done
# internal/scenario's TestLessonsNameKubeletSource reads k8s.io/kubernetes v1.37.0 from the module
# cache; cold, hack/prebuild.sh may not have fetched it yet (with CI=true its absence fails the test).
(cd hack/kubelet && GOWORK=off go mod download k8s.io/kubernetes) ||
	echo "hack/test.sh: could not download k8s.io/kubernetes (hack/kubelet/go.mod) for the lessons' source check"
section "go test ./..."
UNIT_LOG=$(mktemp /tmp/podstep-unit.XXXXXX)
gotest "$UNIT_LOG" go test ./...
rc=$?
record "go test ./... (unit)$(failed_tests "$UNIT_LOG")" $rc
rm -f "$UNIT_LOG"

# The late checks (fuzz, race; late_checks above): here when not root, else beside the suites.
if [ "$(id -u)" != 0 ]; then
	LATE_RESULTS=$(mktemp /tmp/podstep-late.XXXXXX)
	late_checks "$LATE_RESULTS"
	late_record "$LATE_RESULTS"
	rm -f "$LATE_RESULTS"
fi

# --- 3. integration ----------------------------------------------------------------------------
# The suite runs once per runtime of the matrix (hack/harness-env.sh):
#   1.6  Debian's containerd 1.6 (the package)
#   2    containerd v2.4.2, built from the Go module proxy once (cached in ~/.cache/podstep)
#        with runc 1.3.6, built from the Go module proxy once too (hack/runc-build.sh, run by
#        containerd-up.sh; cached in ~/.cache/podstep/runc-v1.3.6): user namespaces need it
# one after the other, each  containerd-up.sh → go test → containerd-down.sh. (Not both at once:
# the suites would share the host's port 18080 (TestHostPort) and the machine's 2 cores.)
# Each harness takes its per-runtime defaults: its own folder, socket, CNI network and registry.
# PODSTEP_TEST_RUNTIMES="1.6" (or "2") runs fewer; with CI=true a runtime left out is a failure.
ALL_RUNTIMES=(1.6 2)
read -r -a RUNTIMES <<<"${PODSTEP_TEST_RUNTIMES:-${ALL_RUNTIMES[*]}}"
for rt in "${ALL_RUNTIMES[@]}"; do
	if [[ " ${RUNTIMES[*]} " != *" $rt "* ]]; then
		if [ "$CI" = true ]; then
			banner FAILED "PODSTEP_TEST_RUNTIMES='${RUNTIMES[*]}' leaves out containerd $rt (CI=true: every runtime must run)"
			record "integration suite on containerd $rt (left out by PODSTEP_TEST_RUNTIMES)" 1
		else
			RESULTS+=("SKIPPED integration suite on containerd $rt (left out by PODSTEP_TEST_RUNTIMES)")
		fi
	fi
done
for rt in "${RUNTIMES[@]}"; do
	[[ " ${ALL_RUNTIMES[*]} " == *" $rt "* ]] || {
		echo "hack/test.sh: PODSTEP_TEST_RUNTIMES: unknown runtime '$rt' (known: ${ALL_RUNTIMES[*]})" >&2
		exit 2
	}
done

if [ "$(id -u)" != 0 ]; then
	if [ "$CI" = true ]; then
		banner FAILED "integration suite needs root (CI=true: running as uid $(id -u) is a failure)"
		record "integration suite (needs root)" 1
	else
		banner SKIPPED "integration suite needs root (it starts a private containerd: run 'sudo bash hack/test.sh')"
		RESULTS+=("SKIPPED integration suite (needs root)")
	fi
	finish
fi

TMP=$(mktemp -d /tmp/podstep-test.XXXXXX)
HARNESS_UP= # the runtime whose harness may be (partly) up
CLUSTER_UP=            # the cluster may be (partly) up
CLUSTER_HARNESSES=()   # the harnesses the cluster phase started (both runtimes)
REPLAY_HARNESSES=()    # the replay harnesses it started (no kubelet watches them): 1.6, 2
# harness SCRIPT RUNTIME [VAR=value...]: run hack/SCRIPT for RUNTIME with the per-runtime defaults
# (a PODSTEP_HARNESS_DIR or PODSTEP_CNI_* in the caller's environment would put both runtimes'
# harnesses in one folder or network).
harness() {
	local script=$1 rt=$2
	shift 2
	env -u PODSTEP_HARNESS_DIR -u PODSTEP_CNI_SUBNET -u PODSTEP_CNI_BRIDGE -u PODSTEP_CNI_NETWORK \
		-u PODSTEP_REGISTRY_PORT PODSTEP_CONTAINERD="$rt" "$@" bash "$REPO_ROOT/hack/$script"
}
harness_down() {
	section "PODSTEP_CONTAINERD=$1 hack/containerd-down.sh"
	harness containerd-down.sh "$1" || echo "hack/test.sh: containerd-down.sh (PODSTEP_CONTAINERD=$1) failed" >&2
	HARNESS_UP=
}
# The cluster phase's replay runtimes: a harness per runtime that no kubelet watches, in folders,
# networks and registry ports of their own (the fleet tests' podstep.dev/replay-endpoint; a
# runtime for run --pod, TestPodOnRuntime). replay_env RUNTIME prints its harness variables.
replay_env() {
	case $1 in
	1.6) echo PODSTEP_HARNESS_DIR=/var/lib/podstep-harness-replay16 PODSTEP_CNI_SUBNET=10.88.75.0/24 \
		PODSTEP_CNI_BRIDGE=podstep5 PODSTEP_CNI_NETWORK=podstep5 PODSTEP_REGISTRY_PORT=5057 ;;
	2) echo PODSTEP_HARNESS_DIR=/var/lib/podstep-harness-replay2 PODSTEP_CNI_SUBNET=10.88.76.0/24 \
		PODSTEP_CNI_BRIDGE=podstep6 PODSTEP_CNI_NETWORK=podstep6 PODSTEP_REGISTRY_PORT=5058 ;;
	esac
}
replay_harness_down() {
	local -a renv
	read -ra renv <<<"$(replay_env "$1")"
	section "PODSTEP_CONTAINERD=$1 $(replay_env "$1") hack/containerd-down.sh"
	harness containerd-down.sh "$1" "${renv[@]}" ||
		echo "hack/test.sh: containerd-down.sh (replay harness, PODSTEP_CONTAINERD=$1) failed" >&2
}
# cluster SCRIPT [VAR=value...]: hack/SCRIPT (cluster-up.sh or cluster-down.sh) with the CI
# defaults (hack/cluster-env.sh: /var/lib/podstep-cluster, ports from 16400, the CI harnesses'
# sockets), whatever PODSTEP_CLUSTER_* the caller's environment has (a developer's cluster).
cluster() {
	local script=$1
	shift
	env -u PODSTEP_CLUSTER_DIR -u PODSTEP_CLUSTER_PORT_BASE -u PODSTEP_CLUSTER_ENDPOINT_16 -u PODSTEP_CLUSTER_ENDPOINT_2 \
		-u PODSTEP_CLUSTER_NODE_16 -u PODSTEP_CLUSTER_NODE_2 "$@" bash "$REPO_ROOT/hack/$script"
}
cluster_down() {
	section "hack/cluster-down.sh"
	cluster cluster-down.sh || echo "hack/test.sh: cluster-down.sh failed" >&2
	CLUSTER_UP=
}
# shellcheck disable=SC2317 # called from the EXIT trap, which shellcheck does not follow
teardown() {
	local rc=$?
	trap - EXIT INT TERM
	prebuild_stop
	late_stop
	if [ -n "$CLUSTER_UP" ]; then
		cluster_down
	fi
	if [ -n "$HARNESS_UP" ]; then
		harness_down "$HARNESS_UP"
	fi
	for rt in "${CLUSTER_HARNESSES[@]}"; do
		harness_down "$rt"
	done
	for rt in "${REPLAY_HARNESSES[@]}"; do
		replay_harness_down "$rt"
	done
	if [ -n "${JAEGER_UP:-}" ]; then
		PODSTEP_JAEGER_DIR=$TMP/jaeger bash "$REPO_ROOT/hack/jaeger-down.sh" || echo "hack/test.sh: jaeger-down.sh failed" >&2
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap teardown EXIT
trap 'echo "hack/test.sh: interrupted" >&2; exit 130' INT TERM

section "go build -o $TMP/podstep ./cmd/podstep"
go build -o "$TMP/podstep" ./cmd/podstep
build=$?
record "go build ./cmd/podstep" $build
late_start
if [ $build != 0 ]; then
	finish
fi

# The proxy test runs a real kubelet v1.37.0 behind podstep proxy: built once from the Go module
# proxy (several minutes cold), then cached in ~/.cache/podstep/kubelet-v1.37.0 (hack/kubelet-build.sh).
section "hack/kubelet-build.sh"
KUBELET_BIN=$(bash hack/kubelet-build.sh | tail -n 1)
kb=$?
[ -x "$KUBELET_BIN" ] || kb=1
record "hack/kubelet-build.sh (kubelet v1.37.0 for the proxy test)" $kb

# The CSI test calls the Kubernetes e2e mock CSI driver (v1.37.0), served by hack/kubelet/csimock: built in
# the kubelet's module, cached in ~/.cache/podstep/csimock-v1.37.0 (hack/csi-mock-build.sh).
section "hack/csi-mock-build.sh"
CSIMOCK_BIN=$(bash hack/csi-mock-build.sh | tail -n 1)
cb=$?
[ -x "$CSIMOCK_BIN" ] || cb=1
record "hack/csi-mock-build.sh (mock CSI driver for the CSI test)" $cb

# The TUI test drives podstep in a real terminal, inside tmux.
if ! command -v tmux >/dev/null; then
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq tmux >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq tmux >/dev/null 2>&1; } ||
		echo "hack/test.sh: could not install tmux; the TUI integration test will fail"
fi
# The timeline test renders the --html page in a real browser, headless.
if ! command -v chromium >/dev/null; then
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null 2>&1; } ||
		echo "hack/test.sh: could not install chromium; the timeline integration test will fail"
fi

# Jaeger v2, the tracing tests' OTLP receiver (built once, cached: hack/jaeger-build.sh), on
# loopback for both runtimes' suites; containerd 2.x exports its spans to it too
# (PODSTEP_OTLP_ENDPOINT, which containerd-up.sh reads). Stopped by the EXIT trap.
JAEGER_UP=
section "hack/jaeger-up.sh (Jaeger v2 for the tracing tests)"
start=$SECONDS
JAEGER_UP=1
if PODSTEP_JAEGER_DIR=$TMP/jaeger bash hack/jaeger-up.sh | tee "$TMP/jaeger.out"; then # (pipefail)
	for v in PODSTEP_OTLP_ENDPOINT PODSTEP_OTLP_GRPC_ENDPOINT PODSTEP_JAEGER_QUERY; do
		export "$v=$(sed -n "s/^$v=//p" "$TMP/jaeger.out" | tail -n 1)"
	done
	record "hack/jaeger-up.sh: Jaeger v2 at $PODSTEP_JAEGER_QUERY ($((SECONDS - start)) s)" 0
else
	banner FAILED "Jaeger did not come up: the tracing tests will fail (log: hack/jaeger-build.sh's build.log, or $TMP/jaeger/jaeger.log)"
	record "hack/jaeger-up.sh" 1
fi

# integration RUNTIME: its harness up, the suite against it, its harness down.
integration() {
	local rt=$1
	local out=$TMP/harness-$rt.out up rc start name
	section "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh"
	HARNESS_UP=$rt # from here on, tear down whatever came up, even half of it
	start=$SECONDS
	# PODSTEP_BIN: the harness checks readiness with this binary instead of building its own.
	harness containerd-up.sh "$rt" PODSTEP_BIN="$TMP/podstep" | tee "$out"
	up=$?
	# harness_value KEY: the last KEY=value line the harness printed (endpoint, subnet, the
	# registry's address, credentials and image, and the runtime's name and version)
	harness_value() { sed -n "s/^$1=//p" "$out" | tail -n 1; }
	local endpoint subnet registry
	endpoint=$(tail -n 1 "$out" | sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p')
	subnet=$(harness_value CNI_SUBNET)
	registry=$(harness_value PODSTEP_REGISTRY)
	name=$(harness_value PODSTEP_RUNTIME)
	if [ $up != 0 ] || [ -z "$endpoint" ] || [ -z "$registry" ] || [ -z "$name" ]; then
		banner FAILED "the containerd $rt harness did not come up (exit $up, endpoint '$endpoint', registry '$registry', runtime '$name'); integration suite on containerd $rt not run"
		record "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh" $((up == 0 ? 1 : up))
		harness_down "$rt"
		return
	fi
	record "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh: $name, $(harness_value PODSTEP_OCI_RUNTIME) ($((SECONDS - start)) s)" 0

	section "go test -count=1 -tags integration ./test/integration/ -v  on $name  (PODSTEP_ENDPOINT=$endpoint PODSTEP_REGISTRY=$registry)"
	start=$SECONDS
	PODSTEP_BIN=$TMP/podstep PODSTEP_ENDPOINT=$endpoint PODSTEP_CNI_SUBNET=$subnet PODSTEP_RUNTIME=$name \
		PODSTEP_REGISTRY=$registry PODSTEP_REGISTRY_USER=$(harness_value PODSTEP_REGISTRY_USER) \
		PODSTEP_REGISTRY_PASSWORD=$(harness_value PODSTEP_REGISTRY_PASSWORD) \
		PODSTEP_REGISTRY_IMAGE=$(harness_value PODSTEP_REGISTRY_IMAGE) PODSTEP_KUBELET=$KUBELET_BIN \
		PODSTEP_CSIMOCK=$CSIMOCK_BIN gotest "$TMP/integration-$rt.log" go test -count=1 -timeout 25m -tags integration ./test/integration/ -v
	rc=$?
	record "integration suite on $name ($((SECONDS - start)) s)$(failed_tests "$TMP/integration-$rt.log")" $rc
	harness_down "$rt"
}

for rt in "${RUNTIMES[@]}"; do
	integration "$rt"
done

# --- 4. cluster --------------------------------------------------------------------------------
# A real Kubernetes v1.37.0 cluster on this machine, two nodes: a kubelet on each runtime's harness
# (started again here, the suites' own are down). Builds (etcd 3.6.16, the control plane, the
# kubelet) are cached in ~/.cache/podstep; cold, they take many minutes (hack/README.md, "Cluster").
# PODSTEP_TEST_CLUSTER=0 leaves the phase out (a failure under CI=true). Each kubelet runs behind
# `podstep proxy --record-dir` (cluster-up.sh's PODSTEP_CLUSTER_PROXY), which TestFidelity's
# comparison with a real kubelet needs; PODSTEP_TEST_CLUSTER_PROXY=0 runs the kubelets without it
# (TestFidelity then fails under CI=true). cluster-up.sh also starts local-path-provisioner (the
# default StorageClass) and the mock CSI driver on each node (TestStorage*: their sockets are passed).
cluster_phase() {
	local rt out up start rc env=() n
	section "cluster: both harnesses up"
	for rt in "${ALL_RUNTIMES[@]}"; do
		out=$TMP/cluster-harness-$rt.out
		CLUSTER_HARNESSES+=("$rt")
		start=$SECONDS
		harness containerd-up.sh "$rt" PODSTEP_BIN="$TMP/podstep" | tee "$out"
		up=$?
		n=${rt/1.6/16}
		env+=("PODSTEP_RUNTIME_$n=$(sed -n 's/^PODSTEP_RUNTIME=//p' "$out" | tail -n 1)"
			"PODSTEP_REGISTRY_$n=$(sed -n 's/^PODSTEP_REGISTRY=//p' "$out" | tail -n 1)"
			"PODSTEP_REGISTRY_IMAGE_$n=$(sed -n 's/^PODSTEP_REGISTRY_IMAGE=//p' "$out" | tail -n 1)"
			"PODSTEP_REGISTRY_USER=$(sed -n 's/^PODSTEP_REGISTRY_USER=//p' "$out" | tail -n 1)"
			"PODSTEP_REGISTRY_PASSWORD=$(sed -n 's/^PODSTEP_REGISTRY_PASSWORD=//p' "$out" | tail -n 1)")
		if [ $up != 0 ] || ! tail -n 1 "$out" | grep -q '^CONTAINER_RUNTIME_ENDPOINT=unix://'; then
			banner FAILED "the containerd $rt harness did not come up for the cluster (exit $up); cluster suite not run"
			record "cluster: PODSTEP_CONTAINERD=$rt hack/containerd-up.sh" $((up == 0 ? 1 : up))
			return
		fi
		record "cluster: PODSTEP_CONTAINERD=$rt hack/containerd-up.sh ($((SECONDS - start)) s)" 0
	done

	section "hack/cluster-up.sh"
	local cluster_out=$TMP/cluster-up.out # cluster_value reads it after $out has moved on
	CLUSTER_UP=1 # from here on, tear down whatever came up, even half of it
	start=$SECONDS
	local proxy=()
	# (--kubeconfig: the proxies read each pod's spec, for TestProxyKnowsThePod)
	[ "${PODSTEP_TEST_CLUSTER_PROXY:-1}" = 0 ] || proxy=(PODSTEP_CLUSTER_PROXY="$TMP/podstep" PODSTEP_CLUSTER_PROXY_ARGS="--kubeconfig ADMIN")
	cluster cluster-up.sh "${proxy[@]}" | tee "$cluster_out"
	up=$?
	cluster_value() { sed -n "s/^$1=//p" "$cluster_out" | tail -n 1; }
	local kubeconfig
	kubeconfig=$(tail -n 1 "$cluster_out" | sed -n 's/^KUBECONFIG=//p')
	if [ $up != 0 ] || [ -z "$kubeconfig" ]; then
		banner FAILED "the cluster did not come up (exit $up; the end of each log of /var/lib/podstep-cluster/logs follows); cluster suite not run"
		for f in /var/lib/podstep-cluster/logs/*.log; do
			[ -f "$f" ] && { printf -- '--- %s (last 15 lines)\n' "$f"; tail -n 15 "$f"; }
		done
		record "hack/cluster-up.sh" $((up == 0 ? 1 : up))
		return
	fi
	record "hack/cluster-up.sh: 2 nodes Ready ($((SECONDS - start)) s)" 0

	# The replay runtimes: the same containerd versions as the nodes', no kubelet (its
	# housekeeping, HandlePodCleanups, stops pods it does not know on its own runtime).
	section "cluster: the replay harnesses up (no kubelet)"
	local -a renv
	for rt in "${ALL_RUNTIMES[@]}"; do
		out=$TMP/replay-harness-$rt.out
		REPLAY_HARNESSES+=("$rt")
		read -ra renv <<<"$(replay_env "$rt")"
		start=$SECONDS
		harness containerd-up.sh "$rt" "${renv[@]}" PODSTEP_BIN="$TMP/podstep" | tee "$out"
		up=$?
		if [ $up != 0 ] || ! tail -n 1 "$out" | grep -q '^CONTAINER_RUNTIME_ENDPOINT=unix://'; then
			banner FAILED "the containerd $rt replay harness did not come up (exit $up); cluster suite not run"
			record "cluster: PODSTEP_CONTAINERD=$rt ${renv[*]} hack/containerd-up.sh" $((up == 0 ? 1 : up))
			return
		fi
		n=${rt/1.6/16}
		env+=("PODSTEP_REPLAY_ENDPOINT_$n=$(tail -n 1 "$out" | sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p')")
		if [ "$rt" = 1.6 ]; then
			# a runtime no kubelet watches, for run --pod (TestPodOnRuntime), with its registry
			env+=("PODSTEP_ENDPOINT=$(tail -n 1 "$out" | sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p')"
				"PODSTEP_REGISTRY=$(sed -n 's/^PODSTEP_REGISTRY=//p' "$out" | tail -n 1)"
				"PODSTEP_REGISTRY_IMAGE=$(sed -n 's/^PODSTEP_REGISTRY_IMAGE=//p' "$out" | tail -n 1)"
				"PODSTEP_REGISTRY_USER=$(sed -n 's/^PODSTEP_REGISTRY_USER=//p' "$out" | tail -n 1)"
				"PODSTEP_REGISTRY_PASSWORD=$(sed -n 's/^PODSTEP_REGISTRY_PASSWORD=//p' "$out" | tail -n 1)")
		fi
		record "cluster: replay harness PODSTEP_CONTAINERD=$rt hack/containerd-up.sh ($((SECONDS - start)) s)" 0
	done

	section "go test -count=1 -tags cluster ./test/cluster/ -v  (KUBECONFIG=$kubeconfig)"
	start=$SECONDS
	gotest "$TMP/cluster.log" env "${env[@]}" KUBECONFIG="$kubeconfig" PODSTEP_BIN="$TMP/podstep" \
		PODSTEP_NODE_16="$(cluster_value NODE_16)" PODSTEP_NODE_2="$(cluster_value NODE_2)" \
		PODSTEP_ENDPOINT_16="$(cluster_value ENDPOINT_16)" PODSTEP_ENDPOINT_2="$(cluster_value ENDPOINT_2)" \
		PODSTEP_KUBELET_ENDPOINT_16="$(cluster_value KUBELET_ENDPOINT_16)" PODSTEP_KUBELET_ENDPOINT_2="$(cluster_value KUBELET_ENDPOINT_2)" \
		PODSTEP_RECORD_DIR_16="$(cluster_value RECORD_DIR_16)" PODSTEP_RECORD_DIR_2="$(cluster_value RECORD_DIR_2)" \
		PODSTEP_LIVE_URL_16="$(cluster_value LIVE_URL_16)" PODSTEP_LIVE_URL_2="$(cluster_value LIVE_URL_2)" \
		PODSTEP_CSI_ENDPOINT_16="$(cluster_value CSI_ENDPOINT_16)" PODSTEP_CSI_ENDPOINT_2="$(cluster_value CSI_ENDPOINT_2)" \
		PODSTEP_CSI_REGISTRY_16="$(cluster_value CSI_REGISTRY_16)" PODSTEP_CSI_REGISTRY_2="$(cluster_value CSI_REGISTRY_2)" \
		go test -count=1 -timeout 40m -tags cluster ./test/cluster/ -v
	rc=$?
	record "cluster suite on 2 nodes (containerd 1.6, containerd 2) ($((SECONDS - start)) s)$(failed_tests "$TMP/cluster.log")" $rc
}
if [ "${PODSTEP_TEST_CLUSTER:-1}" = 0 ]; then
	if [ "$CI" = true ]; then
		banner FAILED "PODSTEP_TEST_CLUSTER=0 leaves out the cluster suite (CI=true: it must run)"
		record "cluster suite (left out by PODSTEP_TEST_CLUSTER=0)" 1
	else
		RESULTS+=("SKIPPED cluster suite (left out by PODSTEP_TEST_CLUSTER=0)")
	fi
else
	cluster_phase
	[ -z "$CLUSTER_UP" ] || cluster_down
	for rt in "${CLUSTER_HARNESSES[@]}"; do
		harness_down "$rt"
	done
	CLUSTER_HARNESSES=()
	for rt in "${REPLAY_HARNESSES[@]}"; do
		replay_harness_down "$rt"
	done
	REPLAY_HARNESSES=()
fi

finish
