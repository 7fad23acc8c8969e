#!/usr/bin/env bash
# prebuild.sh: builds, one after the other, every pinned binary the test command builds from the Go
# module proxy and caches by version (hack/lib/cache.sh), in the order hack/test.sh needs them:
# the kubelet, the mock CSI driver (in the kubelet's module), Jaeger, containerd 2 and runc, etcd,
# the control plane, local-path-provisioner (the cluster's StorageClass). Nothing else: it starts
# no process that outlives it.
#
# hack/test.sh starts it in the background when it begins (as root, unless PODSTEP_PREBUILD=0), at
# the normal CPU priority: on a cold machine these builds are most of the run's CPU and the suites
# wait for them, while the checks beside them (lint, vet, the other platforms' builds) run at nice
# 19 and take what they leave, and the unit tests, at nice 5, a third of what the builds get. The
# cluster's builds (etcd, the control plane, local-path) come last. Each build compiles without
# inlining (-gcflags=all=-l, hack/lib/cache.sh's PINNED_GCFLAGS): cold, 28% less CPU for binaries
# whose speed no test measures. Each build script holds its cache's lock while it builds, so a
# phase that calls the same script meanwhile waits for that build (then finds it cached) instead of
# starting its own. Warm, each script only checks its cache: seconds.
# Exit status: the number of builds that failed (each phase reports its own failure again).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
failed=0
# Each build's CPU: the user and system seconds of its processes (bash's time, into a temp file;
# the build's own messages go to stderr as before).
TIMEFORMAT='%0U s user, %0S s system'
cpu=$(mktemp)
trap 'rm -f "$cpu"' EXIT
for script in kubelet-build.sh csi-mock-build.sh jaeger-build.sh containerd-build.sh etcd-build.sh control-plane-build.sh \
	local-path-build.sh; do
	start=$SECONDS
	if { time bash "$HERE/$script" >/dev/null 2>&3; } 3>&2 2>"$cpu"; then
		printf 'prebuild: %s done in %d s, CPU %s (load %s)\n' "$script" $((SECONDS - start)) "$(tail -n 1 "$cpu")" "$(cut -d' ' -f1-3 /proc/loadavg)"
	else
		printf 'prebuild: %s FAILED after %d s\n' "$script" $((SECONDS - start))
		failed=$((failed + 1))
	fi
done
exit "$failed"
