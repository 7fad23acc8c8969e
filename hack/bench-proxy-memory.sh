#!/usr/bin/env bash
# hack/bench-proxy-memory.sh [COUNT]: the proxy's memory bar (issue 25).
# Runs BenchmarkProxyMemory COUNT times (default 3): the podstep proxy binary in front of the
# simulated runtime, a kubelet's calls for 1,000 pods created and removed one after another
# (each with a 256 KiB exec answer); prints the proxy's RSS idle (started, no call yet), after 100
# and after 1,000 pods, the growth, and the medians. Bars: growth <= 20 MB (issue 25); growth
# <= 10 % of the RSS after 100 pods and idle RSS <= 30 MiB (issue 36).
#   PODSTEP_PROXY_MEM_PODS=N  another number of pods;  PODSTEP_PROXY_MEM_BIN=PATH  another binary
set -euo pipefail
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
count=${1:-3}
out=$(go test -run '^$' -bench 'ProxyMemory' -benchtime 1x -count "$count" ./cmd/podstep)
echo "$out" | grep '^BenchmarkProxyMemory'
growth=$(echo "$out" | awk '/^BenchmarkProxyMemory/ { for (i = 1; i < NF; i++) if ($(i+1) == "growth-MB") print $i }')
m=$(median 1 <<<"$growth")
metric() { echo "$out" | awk -v u="$1" '/^BenchmarkProxyMemory/ { for (i = 1; i < NF; i++) if ($(i+1) == u) print $i }' | median 1; }
idle=$(metric rss-idle-MB) pct=$(metric growth-%)
printf 'median growth over %d runs: %s MB, %s %% (bars: <= 20 MB, <= 10 %%); median idle RSS %s MB (bar: <= 30; the figures are VmRSS kB / 1024, i.e. MiB); load %s\n' \
	"$(grep -c . <<<"$growth")" "$m" "$pct" "$idle" "$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v m="$m" -v p="$pct" -v i="$idle" 'BEGIN { exit (m > 20 || p > 10 || i > 30) }'
