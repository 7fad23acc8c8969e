#!/usr/bin/env bash
# hack/bench-proxy-memory.sh [COUNT]: the proxy's memory bar (issue 25).
# Runs BenchmarkProxyMemory COUNT times (default 3): the podstep proxy binary in front of the
# simulated runtime, a kubelet's calls for 1,000 pods created and removed one after another
# (each with a 256 KiB exec answer); prints the proxy's RSS after 100 and after 1,000 pods, the
# growth, and the median growth. Bar: growth <= 20 MB.
#   PODSTEP_PROXY_MEM_PODS=N  another number of pods;  PODSTEP_PROXY_MEM_BIN=PATH  another binary
set -euo pipefail
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
count=${1:-3}
out=$(go test -run '^$' -bench 'ProxyMemory' -benchtime 1x -count "$count" ./cmd/podstep)
echo "$out" | grep '^BenchmarkProxyMemory'
growth=$(echo "$out" | awk '/^BenchmarkProxyMemory/ { for (i = 1; i < NF; i++) if ($(i+1) == "growth-MB") print $i }')
m=$(median 1 <<<"$growth")
printf 'median growth over %d runs: %s MB (bar: <= 20 MB)\n' "$(grep -c . <<<"$growth")" "$m"
awk -v m="$m" 'BEGIN { exit (m > 20) }'
