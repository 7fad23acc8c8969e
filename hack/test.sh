#!/usr/bin/env bash
# podstep's one test command:  bash hack/test.sh
#
# As root (CI), three lines of work at once, so that the machine's 2 cores are busy from the start
# (cold, the CPU bounds the run; the suites themselves wait on runtimes and leave it mostly idle):
#   A. the pinned builds (hack/prebuild.sh: the kubelet, the mock CSI driver, Jaeger, containerd 2
#      and runc, then etcd, the control plane and local-path-provisioner), from the Go module proxy,
#      cached by version, at the normal CPU priority: the suites wait for them;
#   B. the checks (this script's --checks; nice 19, their own process group; output and results
#      come before the summary), in two lanes:
#        the linters (hack/lint.sh: golangci-lint, shellcheck), GOOS=darwin go build, the release
#        snapshot, hack/fuzz.sh and go test -race on the concurrent packages;
#        go vet, gofmt -l, go mod tidy -diff;
#   C. the suites: go build -o $TMP/podstep ./cmd/podstep  →  go test ./... (the unit tests, in an
#      autogroup at nice 5: before the suites, whose load once made them time out, and below the
#      builds the suites wait for)  →  hack/jaeger-up.sh (Jaeger v2, the tracing tests' OTLP
#      receiver)  →  three suites at once:
#        the integration suite against a real containerd and a private registry, once per runtime
#        (two background jobs): Debian's containerd 1.6 and containerd 2.4.2 (PODSTEP_CONTAINERD=1.6
#        / 2), each  hack/containerd-up.sh → go test -count=1 -tags integration ./test/integration/
#        -v → hack/containerd-down.sh;
#        in the foreground, the cluster suite against a real Kubernetes v1.37.0 cluster: a harness
#        per runtime for its nodes (node_env), then hack/cluster-up.sh (etcd, kube-apiserver,
#        kube-controller-manager, kube-scheduler, and two nodes: a kubelet on each harness), two
#        more harnesses no kubelet watches (the replay runtimes, containerd 1.6 and 2) → go test
#        -count=1 -tags cluster ./test/cluster/ -v → hack/cluster-down.sh and its four harnesses
#        down (always, from the trap).
# The suites share the host: each has its own harnesses, registries, CNI networks and ports; the
# tests that need the host alone (a shadow or sick node, the host's port 18080) take a lock on it
# (testenv.HostLock). PODSTEP_TEST_SERIAL=1 runs the suites one after the other.
#
# Not root: the checks run in the foreground and the integration suite is SKIPPED (loudly); the
# exit status is the checks'.
# CI=true: not being root, a harness (of either runtime) that does not come up, a runtime left out
# (PODSTEP_TEST_RUNTIMES), the cluster phase left out (PODSTEP_TEST_CLUSTER=0) or a cluster that
# does not come up FAILS the run. A harness that does not come up always fails it.
# Every section header says when it began and how many CPU-seconds the machine had been busy since
# the start (/proc/stat), so a cold run's phases and their CPU are read off the log.
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
# cpu_busy: the machine's busy CPU-seconds since boot (/proc/stat: user, nice, system, irq,
# softirq, steal; not idle or iowait).
cpu_busy() { awk '/^cpu / { printf "%d\n", ($2 + $3 + $4 + $7 + $8 + $9) / 100; exit }' /proc/stat 2>/dev/null || echo 0; }
export PODSTEP_TEST_CPU0=${PODSTEP_TEST_CPU0:-$(cpu_busy)}
section() {
	printf '\n=== %s  [%s, +%d s, %d CPU-s busy]\n' "$*" "$(date +%T)" "$(($(date +%s) - PODSTEP_TEST_T0))" \
		"$(($(cpu_busy) - PODSTEP_TEST_CPU0))"
}
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
	checks_collect
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
# record_file RESULTS: record each line ("STATUS<tab>NAME") of a results file.
record_file() {
	local rc name
	while IFS=$'\t' read -r rc name; do record "$name" "$rc"; done <"$1"
}
ROOT=
[ "$(id -u)" != 0 ] || ROOT=1

# Autogroups: with the kernel's (/proc/sys/kernel/sched_autogroup_enabled, on here) each session
# (setsid) is a scheduling group of its own and the groups share the CPU equally whatever their
# processes' nice: a background job is made to yield by its group's nice (/proc/self/autogroup),
# set from inside its new session (from outside, right after the fork, it would still be the
# parent's group).

# apt_tool COMMAND PACKAGE WHY: installs PACKAGE when COMMAND is missing (as root; apt-get waits up
# to 600 s for dpkg's lock). All of them at the start, before the lines of work run side by side.
apt_tool() {
	PATH=$PATH:/sbin:/usr/sbin command -v "$1" >/dev/null && return 0
	[ -n "$ROOT" ] || return 0
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$2" >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$2" >/dev/null 2>&1; } ||
		echo "hack/test.sh: could not install $2; $3"
}

# --- the checks ----------------------------------------------------------------------------------
# checks RESULTS: the linters, vet, the builds for other platforms, gofmt, tidy, the fuzz targets
# and the race run; each check's status and name into RESULTS, a line each (CHECKS_COUNT in all).
# Two lanes side by side: the linters, the other platforms' builds, fuzz and race (checks_tools, its
# output shown after the other lane's), and vet, gofmt and tidy (checks_code). As root this is the
# background job (--checks), its session's autogroup at nice 19 (Autogroups, above): what the CPU
# has left once the builds, the unit tests and the suites have theirs. The unit tests are not a
# check: they run in the suites' line, before the suites (unit_tests).
CHECKS_COUNT=9
RACE_PKGS=(./internal/steps ./internal/tui ./internal/podstate ./internal/cri ./internal/sim ./internal/bench ./internal/trace ./internal/proxy ./internal/watch)
# cmd/podstep's tests of its own goroutines (signals, Ctrl-C, concurrent runs, the in-process proxy
# and its stuck-at view, the TUI's start) under the race detector; its other tests (goldens, the
# command reference, pods of 1,000 containers) drive the packages above, which run whole: under
# the race detector they ran 492 s of a cold run (session 16), for no goroutine of cmd/podstep's own.
RACE_CMD_TESTS='Interrupt|Signal|SIGTERM|Killed|Concurrent|Proxy|Stuck|TUI'

checks() {
	local out=$1 tools_log tools_pid
	tools_log=$(mktemp /tmp/podstep-checks-tools.XXXXXX)
	checks_tools "$out" >"$tools_log" 2>&1 </dev/null &
	tools_pid=$!
	checks_code "$out"
	wait "$tools_pid"
	cat "$tools_log"
	rm -f "$tools_log"
}
check() { printf '%s\t%s\n' "$2" "$3" >>"$1"; } # check RESULTS STATUS NAME
checks_tools() {
	local out=$1 log rc
	# golangci-lint v2.15.0 (.golangci.yml; built once from the Go module proxy into
	# ~/.cache/podstep/golangci-lint-v2.15.0) and shellcheck on hack/*.sh and .ci/run.
	section "hack/lint.sh go (golangci-lint)"
	bash hack/lint.sh go
	check "$out" $? "golangci-lint (hack/lint.sh go)"
	section "hack/lint.sh shell (shellcheck)"
	bash hack/lint.sh shell
	check "$out" $? "shellcheck (hack/lint.sh shell)"

	# Replay runs anywhere: everything but the runtime side builds for macOS too. -trimpath and no
	# cgo as hack/release.sh builds, so the release's darwin/amd64 build below reuses these compiles.
	section "GOOS=darwin go build ./..."
	GOOS=darwin go build ./...
	check "$out" $? "GOOS=darwin go build ./... (replay runs on macOS)"

	# The release build (version stamped, checksums), not published, for the two platforms whose
	# compiles the steps above already made: linux/amd64 (vet's and the tests') and darwin/amd64
	# (the darwin build's). The arm64 builds would add two build configurations (~5 min each cold
	# on 2 cores) and check nothing of podstep's own code, which has no per-architecture file;
	# `bash hack/release.sh` builds all four.
	section "hack/release.sh --snapshot (linux/amd64 darwin/amd64)"
	PODSTEP_RELEASE_TARGETS="linux/amd64 darwin/amd64" bash hack/release.sh --snapshot
	check "$out" $? "release snapshot (hack/release.sh --snapshot: linux/amd64 and darwin/amd64, checksums, stamped version)"

	# The fuzz targets (manifest loading, recordings, the sanitiser: briefly, seeded from testdata:
	# no panic, always exit 2) and the packages with goroutines (the engine and its actions, the
	# TUI, the pod state tracker, the CRI client and its hooks, the simulated runtime, bench's pod
	# workers, the signal handling in cmd, tracing, the proxy, watch) again under the race detector.
	section "fuzz (hack/fuzz.sh)"
	bash hack/fuzz.sh
	check "$out" $? "fuzz (hack/fuzz.sh, 10 s per target)"
	section "go test -race ${RACE_PKGS[*]}; go test -race ./cmd/podstep -run '$RACE_CMD_TESTS'"
	log=$(mktemp /tmp/podstep-race.XXXXXX)
	CGO_ENABLED=1 gotest "$log" go test -timeout 30m -race "${RACE_PKGS[@]}"
	rc=$?
	CGO_ENABLED=1 gotest "$log.cmd" go test -timeout 30m -race ./cmd/podstep -run "$RACE_CMD_TESTS"
	rc=$((rc | $?))
	cat "$log.cmd" >>"$log"
	rm -f "$log.cmd"
	check "$out" $rc "go test -race (concurrent packages, cmd/podstep's signal, proxy and TUI tests)$(failed_tests "$log")"
	rm -f "$log"
}
checks_code() {
	local out=$1 log rc
	# One vet run with both suites' build tags (they add only their own packages' files).
	section "go vet -tags integration,cluster ./..."
	go vet -tags integration,cluster ./...
	check "$out" $? "go vet -tags integration,cluster ./..."

	section "gofmt -l"
	local gofiles unformatted
	mapfile -t gofiles < <(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
	unformatted=$(gofmt -l "${gofiles[@]}")
	[ -z "$unformatted" ] || printf 'gofmt would change:\n%s\n' "$unformatted"
	check "$out" "$([ -z "$unformatted" ] && echo 0 || echo 1)" "gofmt -l (every Go file formatted)"

	section "go mod tidy -diff"
	go mod tidy -diff
	check "$out" $? "go mod tidy -diff (go.mod and go.sum are tidy)"
}
# unit_tests: go test ./... (every package's own tests, the command reference's check among them);
# its status and name go to record. As root, in a session (an autogroup) of its own at nice 5
# (Autogroups, above): below the pinned builds the suites wait for, above the checks. It runs before
# the suites: beside three suites (load 27) cmd/podstep's tests once ran past go test's 10 min.
unit_tests() {
	local log rc nice=()
	# internal/scenario's TestLessonsNameKubeletSource reads k8s.io/kubernetes v1.37.0 from the
	# module cache (with CI=true its absence fails the test); the kubelet's build fetches it too.
	(cd hack/kubelet && GOWORK=off go mod download k8s.io/kubernetes) ||
		echo "hack/test.sh: could not download k8s.io/kubernetes (hack/kubelet/go.mod) for the lessons' source check"
	[ -z "$ROOT" ] || nice=(setsid -w bash -c 'echo 5 >/proc/self/autogroup 2>/dev/null; exec "$@"' unit)
	section "go test ./..."
	log=$(mktemp /tmp/podstep-unit.XXXXXX)
	gotest "$log" "${nice[@]}" go test -timeout 20m ./...
	rc=$?
	record "go test ./... (unit)$(failed_tests "$log")" $rc
	rm -f "$log"
}
if [ "${1:-}" = --checks ]; then # the background job's own run, in a session of its own
	echo 19 >/proc/self/autogroup 2>/dev/null || true # (Autogroups, above)
	checks "$2"
	exit 0
fi

# The tools the checks and the suites run, installed up front: internal/live's TestPageFoldsPodDelta
# runs the page's fold (live.js) in node (with CI=true a missing node fails it); internal/volume's
# TestLocalBlockDevice and the suite's TestLocalBlockDeviceVolume format and mount a loop device as
# the kubelet's local volume plugin does (losetup, mount, blkid, fsck, mkfs.ext4); the TUI test
# drives podstep in tmux; the timeline test renders the --html page in headless Chromium.
apt_tool shellcheck shellcheck "hack/lint.sh shell will fail"
apt_tool node nodejs "internal/live's fold test will fail under CI=true"
for tool in losetup:mount mount:mount blkid:util-linux fsck:util-linux mkfs.ext4:e2fsprogs; do
	apt_tool "${tool%%:*}" "${tool#*:}" "the local block-device volume tests will fail"
done
if [ -n "$ROOT" ]; then
	apt_tool tmux tmux "the TUI integration test will fail"
	apt_tool chromium chromium "the timeline integration test will fail"
fi

# The pinned binaries built from the Go module proxy (hack/prebuild.sh: the kubelet, the mock CSI
# driver, Jaeger, containerd 2 and runc, etcd, the control plane, local-path-provisioner), in the
# background from the start: cold, they are most of the run's CPU and the suites wait for them;
# warm, seconds. Only as root (the phases that use them need root). PODSTEP_PREBUILD=0: each is
# built by its phase.
PREBUILD_PID=
PREBUILD_LOG=
if [ -n "$ROOT" ] && [ "${PODSTEP_PREBUILD:-1}" != 0 ]; then
	PREBUILD_LOG=$(mktemp /tmp/podstep-prebuild.XXXXXX)
	setsid bash hack/prebuild.sh >"$PREBUILD_LOG" 2>&1 &
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
# The checks: as root in the background from the start (nice 19, their own process group; output
# and results in temp files, shown before the summary); not root, here in the foreground.
CHECKS_PID=
CHECKS_LOG=
CHECKS_RESULTS=$(mktemp /tmp/podstep-checks.XXXXXX)
if [ -n "$ROOT" ]; then
	CHECKS_LOG=$(mktemp /tmp/podstep-checks-log.XXXXXX)
	nice -n 19 setsid bash "$REPO_ROOT/hack/test.sh" --checks "$CHECKS_RESULTS" >"$CHECKS_LOG" 2>&1 </dev/null &
	CHECKS_PID=$!
	echo "hack/test.sh: the checks (lint, vet, builds, fuzz, race) in the background beside the suites (nice 19; their output comes before the summary)"
else
	checks "$CHECKS_RESULTS"
	unit_tests
fi
# checks_collect: waits for the checks, shows their output and records their results (a check
# that did not report is a failure).
checks_collect() {
	if [ -n "$CHECKS_PID" ]; then
		section "the checks (run in the background beside the suites)"
		local start=$SECONDS
		wait "$CHECKS_PID"
		[ $((SECONDS - start)) -lt 2 ] || echo "hack/test.sh: waited $((SECONDS - start)) s for them after the suites"
		sed 's/^/  /' "$CHECKS_LOG"
		CHECKS_PID=
	fi
	[ -n "$CHECKS_RESULTS" ] || return 0
	record_file "$CHECKS_RESULTS"
	[ "$(wc -l <"$CHECKS_RESULTS")" = "$CHECKS_COUNT" ] || record "the checks: ran to their end (each reports its status)" 1
	rm -f "$CHECKS_LOG" "$CHECKS_RESULTS"
	CHECKS_RESULTS=
}
# checks_stop: on an early exit, stops them (their process group).
# shellcheck disable=SC2317 # called from the EXIT trap, which shellcheck does not follow
checks_stop() {
	[ -n "$CHECKS_PID" ] || return 0
	kill -- -"$CHECKS_PID" 2>/dev/null && echo "hack/test.sh: stopped the background checks" >&2
	wait "$CHECKS_PID" 2>/dev/null
	rm -f "$CHECKS_LOG" "$CHECKS_RESULTS"
	CHECKS_PID=
}
trap 'prebuild_stop; checks_stop' EXIT
trap 'echo "hack/test.sh: interrupted" >&2; exit 130' INT TERM

# --- 3. integration ----------------------------------------------------------------------------
# The suite runs once per runtime of the matrix (hack/harness-env.sh):
#   1.6  Debian's containerd 1.6 (the package)
#   2    containerd v2.4.2, built from the Go module proxy once (cached in ~/.cache/podstep)
#        with runc 1.3.6, built from the Go module proxy once too (hack/runc-build.sh, run by
#        containerd-up.sh; cached in ~/.cache/podstep/runc-v1.3.6): user namespaces need it
# both at once (PODSTEP_TEST_SERIAL=1: one after the other), each  containerd-up.sh → go test →
# containerd-down.sh. Each harness takes its per-runtime defaults: its own folder, socket, CNI
# network and registry; each suite its own kubelet ports and runtimegone harness (suite_env). The
# tests that need the host alone take testenv.HostLock.
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
SUITES=()    # the runtimes whose integration suite started: their harnesses may be (partly) up
SUITE_PIDS=() # their background jobs (each its own process group)
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
# shellcheck disable=SC2317 # called from the EXIT trap and by integration (suite_job's bash -c)
harness_down() {
	section "PODSTEP_CONTAINERD=$1 hack/containerd-down.sh"
	harness containerd-down.sh "$1" || echo "hack/test.sh: containerd-down.sh (PODSTEP_CONTAINERD=$1) failed" >&2
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
# The cluster's nodes' harnesses: one per runtime, in folders, networks and registry ports of their
# own (the integration suites' harnesses run at the same time). node_env RUNTIME prints its harness
# variables; node_endpoint RUNTIME its CRI endpoint, for cluster-up.sh (PODSTEP_CLUSTER_ENDPOINT_*).
node_env() {
	case $1 in
	1.6) echo PODSTEP_HARNESS_DIR=/var/lib/podstep-harness-node16 PODSTEP_CNI_SUBNET=10.88.73.0/24 \
		PODSTEP_CNI_BRIDGE=podstep3 PODSTEP_CNI_NETWORK=podstep3 PODSTEP_REGISTRY_PORT=5053 PODSTEP_CNI_HANG_POD=hang-cni- ;;
	2) echo PODSTEP_HARNESS_DIR=/var/lib/podstep-harness-node2 PODSTEP_CNI_SUBNET=10.88.74.0/24 \
		PODSTEP_CNI_BRIDGE=podstep4 PODSTEP_CNI_NETWORK=podstep4 PODSTEP_REGISTRY_PORT=5054 PODSTEP_CNI_HANG_POD=hang-cni- ;;
	esac
}
node_endpoint() { echo "unix:///var/lib/podstep-harness-node${1/1.6/16}/run/containerd.sock"; }
# cluster_harness_down KIND RUNTIME: the cluster phase's harness of KIND (node or replay: node_env,
# replay_env) for RUNTIME, down.
cluster_harness_down() {
	local -a henv
	read -ra henv <<<"$("$1_env" "$2")"
	section "PODSTEP_CONTAINERD=$2 ${henv[*]} hack/containerd-down.sh"
	harness containerd-down.sh "$2" "${henv[@]}" ||
		echo "hack/test.sh: containerd-down.sh ($1 harness, PODSTEP_CONTAINERD=$2) failed" >&2
}
# cluster SCRIPT [VAR=value...]: hack/SCRIPT (cluster-up.sh or cluster-down.sh) with the CI
# defaults (hack/cluster-env.sh: /var/lib/podstep-cluster, ports from 16400) and the node harnesses'
# sockets (node_env), whatever PODSTEP_CLUSTER_* the caller's environment has (a developer's cluster).
cluster() {
	local script=$1
	shift
	env -u PODSTEP_CLUSTER_DIR -u PODSTEP_CLUSTER_PORT_BASE -u PODSTEP_CLUSTER_NODE_16 -u PODSTEP_CLUSTER_NODE_2 \
		PODSTEP_CLUSTER_ENDPOINT_16="$(node_endpoint 1.6)" PODSTEP_CLUSTER_ENDPOINT_2="$(node_endpoint 2)" \
		"$@" bash "$REPO_ROOT/hack/$script"
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
	checks_stop
	suites_stop
	if [ -n "$CLUSTER_UP" ]; then
		cluster_down
	fi
	for rt in "${SUITES[@]}"; do
		[ -e "$TMP/suite-$rt.down" ] || harness_down "$rt"
	done
	for rt in "${CLUSTER_HARNESSES[@]}"; do
		cluster_harness_down node "$rt"
	done
	for rt in "${REPLAY_HARNESSES[@]}"; do
		cluster_harness_down replay "$rt"
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
if [ $build != 0 ]; then
	finish
fi
unit_tests

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

# suite_env RUNTIME: what each suite has of its own beside its harness, so that both run at once:
# the kubelet tests' ports and runtimegone's second harness (its folder, network and registry).
# shellcheck disable=SC2317 # run by integration (below)
suite_env() {
	case $1 in
	2) echo PODSTEP_KUBELET_PORT=10360 PODSTEP_KUBELET_HEALTHZ_PORT=10358 \
		PODSTEP_RUNTIME_GONE_DIR=/var/lib/podstep-runtime-gone2 PODSTEP_RUNTIME_GONE_SUBNET=10.88.80.0/24 \
		PODSTEP_RUNTIME_GONE_BRIDGE=pstgone2 PODSTEP_RUNTIME_GONE_NETWORK=pstgone2 PODSTEP_RUNTIME_GONE_PORT=5079 ;;
	esac
}
# integration RUNTIME: its harness up, the suite against it, its harness down; a background job
# (suites_start): its output in $TMP/suite-RUNTIME.out, its results ("STATUS<tab>NAME") in
# $TMP/suite-RUNTIME.results, and $TMP/suite-RUNTIME.down once its harness is down.
# shellcheck disable=SC2317 # run by suite_job's bash -c (declare -f), which shellcheck does not follow
integration() {
	local rt=$1
	local out=$TMP/harness-$rt.out results=$TMP/suite-$rt.results up rc start name
	result() { printf '%s\t%s\n' "$2" "$1" >>"$results"; } # result NAME STATUS
	section "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh"
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
	if [ "$up" != 0 ] || [ -z "$endpoint" ] || [ -z "$registry" ] || [ -z "$name" ]; then
		banner FAILED "the containerd $rt harness did not come up (exit $up, endpoint '$endpoint', registry '$registry', runtime '$name'); integration suite on containerd $rt not run"
		result "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh" "$((up == 0 ? 1 : up))"
		harness_down "$rt"
		touch "$TMP/suite-$rt.down"
		return
	fi
	result "PODSTEP_CONTAINERD=$rt hack/containerd-up.sh: $name, $(harness_value PODSTEP_OCI_RUNTIME) ($((SECONDS - start)) s)" 0

	local -a senv
	read -ra senv <<<"$(suite_env "$rt")"
	section "go test -count=1 -tags integration ./test/integration/ -v  on $name  (PODSTEP_ENDPOINT=$endpoint PODSTEP_REGISTRY=$registry ${senv[*]})"
	start=$SECONDS
	env "${senv[@]}" PODSTEP_BIN="$TMP/podstep" PODSTEP_ENDPOINT="$endpoint" PODSTEP_CNI_SUBNET="$subnet" PODSTEP_RUNTIME="$name" \
		PODSTEP_REGISTRY="$registry" PODSTEP_REGISTRY_USER="$(harness_value PODSTEP_REGISTRY_USER)" \
		PODSTEP_REGISTRY_PASSWORD="$(harness_value PODSTEP_REGISTRY_PASSWORD)" \
		PODSTEP_REGISTRY_IMAGE="$(harness_value PODSTEP_REGISTRY_IMAGE)" PODSTEP_KUBELET="$KUBELET_BIN" \
		PODSTEP_CSIMOCK="$CSIMOCK_BIN" go test -count=1 -timeout 35m -tags integration ./test/integration/ -v
	rc=$?
	result "integration suite on $name ($((SECONDS - start)) s)$(failed_tests "$TMP/suite-$rt.out")" "$rc"
	harness_down "$rt"
	touch "$TMP/suite-$rt.down"
}
# suite_job RUNTIME: integration RUNTIME as a background job of its own process group (setsid),
# its output into $TMP/suite-RUNTIME.out.
suite_job() {
	SUITES+=("$1")
	setsid bash -c "set -uo pipefail; $(declare -f section cpu_busy banner failed_tests harness harness_down suite_env integration); $(declare -p TMP REPO_ROOT KUBELET_BIN CSIMOCK_BIN); integration $1" \
		>"$TMP/suite-$1.out" 2>&1 </dev/null &
	SUITE_PIDS+=($!)
	echo "hack/test.sh: the integration suite on containerd $1 started (pid $!; its output follows when it ends)"
}
# suite_wait INDEX: waits for that job, shows its output, records its results.
suite_wait() {
	local rt=${SUITES[$1]} pid=${SUITE_PIDS[$1]}
	wait "$pid"
	section "the integration suite on containerd $rt (its output)"
	cat "$TMP/suite-$rt.out"
	SUITE_PIDS[$1]=
	if [ -s "$TMP/suite-$rt.results" ]; then
		record_file "$TMP/suite-$rt.results"
	else
		record "integration suite on containerd $rt: ran to its end (reports its status)" 1
	fi
}
# suites_stop: on an early exit, stops the suites still running (their process groups).
# shellcheck disable=SC2317 # called from the EXIT trap, which shellcheck does not follow
suites_stop() {
	local pid
	for pid in "${SUITE_PIDS[@]}"; do
		[ -n "$pid" ] || continue
		kill -- -"$pid" 2>/dev/null && echo "hack/test.sh: stopped an integration suite (pid $pid)" >&2
		wait "$pid" 2>/dev/null
	done
	SUITE_PIDS=()
}

if [ "${PODSTEP_TEST_SERIAL:-0}" = 1 ]; then
	for rt in "${RUNTIMES[@]}"; do
		suite_job "$rt"
		suite_wait $((${#SUITES[@]} - 1))
	done
else
	for rt in "${RUNTIMES[@]}"; do
		suite_job "$rt"
	done
fi

# --- 4. cluster --------------------------------------------------------------------------------
# A real Kubernetes v1.37.0 cluster on this machine, two nodes: a kubelet on each runtime's harness
# (harnesses of their own, node_env: the integration suites run meanwhile, unless
# PODSTEP_TEST_SERIAL=1, which runs it after them). Builds (etcd 3.6.16, the control plane, the
# kubelet) are cached in ~/.cache/podstep; cold, they take many minutes (hack/README.md, "Cluster").
# PODSTEP_TEST_CLUSTER=0 leaves the phase out (a failure under CI=true). Each kubelet runs behind
# `podstep proxy --record-dir` (cluster-up.sh's PODSTEP_CLUSTER_PROXY), which TestFidelity's
# comparison with a real kubelet needs; PODSTEP_TEST_CLUSTER_PROXY=0 runs the kubelets without it
# (TestFidelity then fails under CI=true). cluster-up.sh also starts local-path-provisioner (the
# default StorageClass) and the mock CSI driver on each node (TestStorage*: their sockets are passed).
cluster_phase() {
	local rt out up start rc env=() n
	section "cluster: both node harnesses up"
	local -a nenv
	for rt in "${ALL_RUNTIMES[@]}"; do
		out=$TMP/cluster-harness-$rt.out
		CLUSTER_HARNESSES+=("$rt")
		start=$SECONDS
		read -ra nenv <<<"$(node_env "$rt")"
		harness containerd-up.sh "$rt" "${nenv[@]}" PODSTEP_BIN="$TMP/podstep" | tee "$out"
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
		cluster_harness_down node "$rt"
	done
	CLUSTER_HARNESSES=()
	for rt in "${REPLAY_HARNESSES[@]}"; do
		cluster_harness_down replay "$rt"
	done
	REPLAY_HARNESSES=()
fi

# The integration suites started before the cluster phase (both at once): their outputs and results.
for i in "${!SUITE_PIDS[@]}"; do
	[ -z "${SUITE_PIDS[$i]}" ] || suite_wait "$i"
done

finish
