#!/usr/bin/env bash
# What podstep proxy adds to a CRI call, against a running harness containerd:
#   hack/bench-proxy.sh [COUNT]      (default 3 runs)
# Runs BenchmarkAddedLatency (internal/proxy/bench_test.go) COUNT times: Version and
# ListContainers in turn at 500 calls/s (PODSTEP_BENCH_RATE), 2000 calls, each sent directly
# and through the proxy (with the watcher decoding and attributing every call, as
# `podstep proxy` does), interleaved; prints the median and 99th percentile of both and what
# the proxy added. Endpoint: $CONTAINER_RUNTIME_ENDPOINT, else the harness socket.
# PODSTEP_BENCH_OTLP=http://127.0.0.1:PORT: with `podstep proxy --otlp-endpoint`'s span per call,
# exported there (each call carrying a sampled traceparent, as from a kubelet that traces).
set -euo pipefail

COUNT=${1:-3}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
[ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
ENDPOINT=${CONTAINER_RUNTIME_ENDPOINT:-unix://${PODSTEP_HARNESS_DIR:-/var/lib/podstep-harness}/run/containerd.sock}
PODSTEP_BENCH_ENDPOINT=$ENDPOINT go test -run '^$' -bench BenchmarkAddedLatency -benchtime 1x -count "$COUNT" ./internal/proxy/
