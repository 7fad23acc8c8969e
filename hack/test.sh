#!/usr/bin/env bash
# podstep's one test command:  bash hack/test.sh
#
#   1. go vet (all packages, and the integration package with its build tag); go mod tidy -diff
#   2. go test ./...                     unit tests; go test -race on the concurrent packages
#   3. as root: the integration suite against a real containerd and a private registry
#        go build -o $TMP/podstep ./cmd/podstep  →  hack/containerd-up.sh
#        →  go test -count=1 -tags integration ./test/integration/ -v
#        →  hack/containerd-down.sh (always, from a trap)
#
# Not root: the integration suite is SKIPPED (loudly) and the exit status is the unit tests'.
# CI=true: not being root, or a harness that does not come up, FAILS the run.
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

declare -a RESULTS=()
FAILED=0
section() { printf '\n=== %s\n' "$*"; }
record() { # record NAME STATUS
	if [ "$2" = 0 ]; then
		RESULTS+=("ok      $1")
	else
		RESULTS+=("FAILED  $1 (exit $2)")
		FAILED=1
	fi
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
	section "summary"
	printf '  %s\n' "${RESULTS[@]}"
	if [ "$FAILED" = 0 ]; then
		echo "hack/test.sh: PASS"
		exit 0
	fi
	echo "hack/test.sh: FAIL"
	exit 1
}

# --- 1. vet ------------------------------------------------------------------------------------
section "go vet ./..."
go vet ./...
record "go vet ./..." $?
section "go vet -tags integration ./test/integration/"
go vet -tags integration ./test/integration/
record "go vet -tags integration ./test/integration/" $?

section "go mod tidy -diff"
go mod tidy -diff
record "go mod tidy -diff (go.mod and go.sum are tidy)" $?

# --- 2. unit tests -----------------------------------------------------------------------------
section "go test ./..."
go test ./...
record "go test ./... (unit)" $?

# Fuzz targets (manifest loading), briefly, seeded from testdata: no panic, always exit 2.
section "fuzz (hack/fuzz.sh)"
bash hack/fuzz.sh
record "fuzz (hack/fuzz.sh, 10 s per target)" $?

# The packages with goroutines (the engine and its actions, the TUI, the pod state tracker, the
# CRI client and its hooks, the simulated runtime, the signal handling in cmd) again under the
# race detector.
RACE_PKGS=(./internal/steps ./internal/tui ./internal/podstate ./internal/cri ./internal/sim ./cmd/podstep)
section "go test -race ${RACE_PKGS[*]}"
go test -race "${RACE_PKGS[@]}"
record "go test -race (concurrent packages)" $?

# --- 3. integration ----------------------------------------------------------------------------
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
HARNESS_UP=0
teardown() {
	local rc=$?
	trap - EXIT INT TERM
	if [ "$HARNESS_UP" = 1 ]; then
		section "hack/containerd-down.sh"
		bash "$REPO_ROOT/hack/containerd-down.sh" || echo "hack/test.sh: containerd-down.sh failed" >&2
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

section "hack/containerd-up.sh"
HARNESS_UP=1 # from here on, tear down whatever came up, even half of it
# PODSTEP_BIN: the harness checks readiness with this binary instead of building its own.
PODSTEP_BIN=$TMP/podstep bash "$REPO_ROOT/hack/containerd-up.sh" | tee "$TMP/harness.out"
up=$?
ENDPOINT=$(tail -n 1 "$TMP/harness.out" | sed -n 's/^CONTAINER_RUNTIME_ENDPOINT=//p')
SUBNET=$(sed -n 's/^CNI_SUBNET=//p' "$TMP/harness.out" | tail -n 1)
# harness_value KEY: the last KEY=value line the harness printed (the registry's address,
# credentials and image, for the pull secret tests)
harness_value() { sed -n "s/^$1=//p" "$TMP/harness.out" | tail -n 1; }
REGISTRY=$(harness_value PODSTEP_REGISTRY)
REGISTRY_USER=$(harness_value PODSTEP_REGISTRY_USER)
REGISTRY_PASSWORD=$(harness_value PODSTEP_REGISTRY_PASSWORD)
REGISTRY_IMAGE=$(harness_value PODSTEP_REGISTRY_IMAGE)
if [ $up != 0 ] || [ -z "$ENDPOINT" ] || [ -z "$REGISTRY" ]; then
	banner FAILED "the containerd harness did not come up (exit $up, endpoint '${ENDPOINT}', registry '${REGISTRY}'); integration suite not run"
	record "hack/containerd-up.sh" $((up == 0 ? 1 : up))
	finish
fi
record "hack/containerd-up.sh" 0

# The TUI test drives podstep in a real terminal, inside tmux.
if ! command -v tmux >/dev/null; then
	apt-get install -y -qq tmux >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tmux >/dev/null 2>&1; } ||
		echo "hack/test.sh: could not install tmux; the TUI integration test will fail"
fi

section "go test -count=1 -tags integration ./test/integration/ -v  (PODSTEP_ENDPOINT=$ENDPOINT PODSTEP_REGISTRY=$REGISTRY)"
PODSTEP_BIN=$TMP/podstep PODSTEP_ENDPOINT=$ENDPOINT PODSTEP_CNI_SUBNET=${SUBNET:-10.88.77.0/24} \
	PODSTEP_REGISTRY=$REGISTRY PODSTEP_REGISTRY_USER=$REGISTRY_USER \
	PODSTEP_REGISTRY_PASSWORD=$REGISTRY_PASSWORD PODSTEP_REGISTRY_IMAGE=$REGISTRY_IMAGE \
	go test -count=1 -timeout 10m -tags integration ./test/integration/ -v
record "integration suite (go test -tags integration ./test/integration/)" $?

finish
