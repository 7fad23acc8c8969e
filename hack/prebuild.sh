#!/usr/bin/env bash
# prebuild.sh: builds, one after the other, every pinned binary the test command builds from the Go
# module proxy and caches by version (hack/lib/cache.sh), in the order hack/test.sh needs them:
# the kubelet, the mock CSI driver (in the kubelet's module), Jaeger, containerd 2 and runc, etcd,
# the control plane, local-path-provisioner (the cluster's StorageClass). Nothing else: it starts
# no process that outlives it.
#
# hack/test.sh starts it in the background at the lowest CPU priority when it begins (as root,
# unless PODSTEP_PREBUILD=0). On a cold machine these builds are most of the run's CPU; started
# early, they take the CPU the lint, unit and integration phases leave idle, where they otherwise
# each waited for its phase. Each build script holds its cache's lock while it builds, so a phase
# that calls the same script meanwhile waits for that build (then finds it cached) instead of
# starting its own. Warm, each script only checks its cache: seconds.
# Exit status: the number of builds that failed (each phase reports its own failure again).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
failed=0
for script in kubelet-build.sh csi-mock-build.sh jaeger-build.sh containerd-build.sh etcd-build.sh control-plane-build.sh \
	local-path-build.sh; do
	start=$SECONDS
	if bash "$HERE/$script" >/dev/null; then
		printf 'prebuild: %s done in %d s (load %s)\n' "$script" $((SECONDS - start)) "$(cut -d' ' -f1-3 /proc/loadavg)"
	else
		printf 'prebuild: %s FAILED after %d s\n' "$script" $((SECONDS - start))
		failed=$((failed + 1))
	fi
done
exit "$failed"
