#!/usr/bin/env bash
# lint.sh: podstep's linters, as hack/test.sh runs them.
#
#   1. golangci-lint v2.15.0 (pinned; config .golangci.yml: staticcheck, unused, errcheck, govet,
#      gocritic's diagnostic checks), built once from the Go module proxy into
#        ${PODSTEP_CACHE_DIR:-~/.cache/podstep}/golangci-lint-v2.15.0/bin/golangci-lint
#      and reused while `golangci-lint version` names v2.15.0 (under a lock: two callers at once
#      build once; log .../golangci-lint-v2.15.0/build.log). Run once on ./... with the integration
#      and cluster build tags (the two suites' packages with the rest).
#   2. shellcheck (Debian's package; installed when missing) on hack/*.sh, hack/lib/*.sh and .ci/run.
#
# Exit status: non-zero when either linter reports anything (or cannot run).
# Usage: bash hack/lint.sh            both
#        bash hack/lint.sh go|shell   one of them
#        bash hack/lint.sh --build    only build (or find) golangci-lint and print its path
set -uo pipefail

GOLANGCI_LINT_VERSION=v2.15.0
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/cache.sh
. "$REPO_ROOT/hack/lib/cache.sh"
CACHE=$(cache_dir "golangci-lint-$GOLANGCI_LINT_VERSION")
BIN=$CACHE/bin/golangci-lint

log() { printf 'lint: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

if [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi

# works: the cached binary runs and names the pinned version.
works() { [ -x "$BIN" ] && [[ $("$BIN" version 2>/dev/null) == *"version ${GOLANGCI_LINT_VERSION#v} "* ]]; }

compile() (
	cd "$CACHE" && GOWORK=off GOFLAGS='' CGO_ENABLED=0 GOBIN="$1" \
		"$GO" install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
)
build() {
	find_go "building golangci-lint"
	build_bin "$CACHE" "golangci-lint $GOLANGCI_LINT_VERSION" "a few minutes the first time" compile
}

golangci() { cached "$CACHE" works build "golangci-lint $GOLANGCI_LINT_VERSION"; }

lint_go() {
	local rc=0
	golangci
	cd "$REPO_ROOT" || exit 2
	# One run with both suites' build tags: every package once (the tags add only the two suites'
	# files), where three runs loaded the shared packages three times (cold: minutes of CPU each).
	log "golangci-lint run --build-tags integration,cluster ./..."
	"$BIN" run --build-tags integration,cluster ./... || rc=1
	return $rc
}

lint_shell() {
	if ! command -v shellcheck >/dev/null; then
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq shellcheck >/dev/null 2>&1 ||
			{ apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq shellcheck >/dev/null 2>&1; } ||
			die "no shellcheck, and apt-get install shellcheck failed"
	fi
	cd "$REPO_ROOT" || exit 2
	local files=(hack/*.sh .ci/run)
	if compgen -G 'hack/lib/*.sh' >/dev/null; then
		files+=(hack/lib/*.sh)
	fi
	log "shellcheck ${files[*]}"
	shellcheck -x "${files[@]}"
}

case ${1:-all} in
--build)
	golangci
	echo "$BIN"
	;;
go) lint_go ;;
shell) lint_shell ;;
all)
	rc=0
	lint_go || rc=1
	lint_shell || rc=1
	exit $rc
	;;
*) die "usage: bash hack/lint.sh [go|shell|--build]" ;;
esac
