#!/usr/bin/env bash
# bench-cluster.sh: what `podstep run --pod` adds over `podstep run -f` of the same pod (the
# API reads, and a TokenRequest), on the simulated runtime so that only podstep's work counts.
# Needs a cluster's admin KUBECONFIG (hack/cluster-up.sh prints it). Prints the median of
# COUNT runs (default 10) of each: file (-f, the pod from kubectl get -o yaml with its
# ConfigMap, Secret and Node), pod (--pod, the same pod), pod-token (--pod, with kube-api-access).
# Bar (issue 21): pod - file <= 150 ms.
set -euo pipefail
# shellcheck source=lib/bench.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh" # cd to the repository, go on PATH
: "${KUBECONFIG:?set KUBECONFIG to the admin kubeconfig of the cluster}"
COUNT=${COUNT:-10}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
podstep_bin "$TMP"
PODSTEP_BIN=$BIN go test -tags cluster ./test/cluster/ -run '^$' -bench BenchmarkRunPod -benchtime "${COUNT}x" -count 1 |
	awk '/^BenchmarkRunPod\// { for (i = 1; i <= NF; i++) if ($i == "median-ms") m[$1] = $(i-1); print }
	     END { for (k in m) if (k ~ /\/file/) f = m[k]; for (k in m) if (k ~ /\/pod-/ || k ~ /\/pod$/) printf "%s: %+.1f ms over -f\n", k, m[k] - f }'
