# shellcheck shell=bash
# hack/lib/bench.sh: what the bench scripts (hack/bench-*.sh, record-examples.sh) share. Sourcing
# it changes to the repository's root and puts /usr/local/go/bin (when there) first on PATH.
#
#   podstep_bin DIR       sets BIN to $PODSTEP_BIN, else builds ./cmd/podstep into DIR/podstep
#   median [DECIMALS [EMPTY]]
#                         the median of the numbers on stdin, one a line, with DECIMALS digits
#                         (default 1); no numbers: prints EMPTY when given, else fails

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
if [ -x /usr/local/go/bin/go ]; then export PATH=/usr/local/go/bin:$PATH; fi

podstep_bin() {
	BIN=${PODSTEP_BIN:-}
	if [ -z "$BIN" ]; then
		go build -o "$1/podstep" ./cmd/podstep
		BIN=$1/podstep
	fi
}

median() {
	sort -g | awk -v d="${1:-1}" -v empty="${2-}" '{ v[NR] = $1 } END {
		if (NR == 0) { if (empty == "") exit 1; print empty; exit 0 }
		f = "%." d "f\n"
		if (NR % 2) printf f, v[(NR + 1) / 2]
		else printf f, (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}
