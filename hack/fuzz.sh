#!/usr/bin/env bash
# Run every Go fuzz target of the packages below briefly, one at a time
# (go test -fuzz takes one target per run):
#
#   bash hack/fuzz.sh                 # 10s per target
#   FUZZTIME=3m bash hack/fuzz.sh     # longer
#
# A failure leaves the failing input under <package>/testdata/fuzz/<Target>/;
# commit it: plain `go test` replays it from then on as a regression seed.
# Exit status: non-zero when a target failed.
set -uo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT" || exit 2
if [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi
FUZZTIME=${FUZZTIME:-10s}
PACKAGES=(./internal/manifest/ ./internal/record/ ./internal/safe/)

failed=0
for pkg in "${PACKAGES[@]}"; do
	targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz') || {
		echo "hack/fuzz.sh: cannot list the fuzz targets of $pkg" >&2
		exit 2
	}
	for target in $targets; do
		echo "=== fuzz $pkg $target ($FUZZTIME)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"; then
			echo "FAILED  $pkg $target" >&2
			failed=1
		fi
	done
done
exit "$failed"
