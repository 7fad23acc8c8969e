#!/usr/bin/env bash
# Start a private containerd (CRI) for podstep's tests, offline but for the Go module proxy.
#
#   hack/containerd-up.sh                        Debian's containerd 1.6 (the package)
#   PODSTEP_CONTAINERD=2 hack/containerd-up.sh   containerd v2.4.2, built once from the Go module
#                                                proxy into ~/.cache/podstep (hack/harness-env.sh)
#
# Everything lives in ONE folder, ${PODSTEP_HARNESS_DIR:-/var/lib/podstep-harness} (containerd 2:
# /var/lib/podstep-harness2); the two runtimes' harnesses can run side by side.
# It also runs a private image registry on loopback (Debian's docker-registry, htpasswd auth,
# data under $DIR/registry) holding one image, for the image pull secret tests.
# The last lines of stdout name the runtime (PODSTEP_RUNTIME=containerd 1.6.20~ds1) and, always last,
#   CONTAINER_RUNTIME_ENDPOINT=unix://$DIR/run/containerd.sock
# so callers can:  eval "$(hack/containerd-up.sh | tail -1)"
# Idempotent: a second run finds containerd and the registry healthy and only re-prints.
# Each job is a file in hack/lib (harness-*.sh), sourced below; this file holds the variables they
# share, the order they run in (main) and the lines it prints. See hack/README.md.
set -euo pipefail

# DIR, CNI_*, REG_PORT and the containerd binaries, per PODSTEP_CONTAINERD (1.6 or 2)
. "$(dirname "${BASH_SOURCE[0]}")/harness-env.sh"
BUSYBOX_IMAGE=docker.io/library/busybox:1.35
PAUSE_IMAGE=podstep.local/pause:1.0
WAIT_SECONDS=${PODSTEP_HARNESS_WAIT:-30}
# The registry: loopback only, fixed test credentials (they guard nothing but this throwaway
# registry; the tests check that the password never shows in podstep's output).
REG_ADDR=127.0.0.1:$REG_PORT
REG_USER=podstep
REG_PASSWORD=s3cret-Podstep-Registry-Pw
PRIVATE_REPO=podstep/private-busybox
PRIVATE_TAG=1.0
PRIVATE_IMAGE=$REG_ADDR/$PRIVATE_REPO:$PRIVATE_TAG

SOCK=$DIR/run/containerd.sock
ENDPOINT=unix://$SOCK
CONFIG=$DIR/config.toml
LOG=$DIR/containerd.log
PIDFILE=$DIR/containerd.pid
REG_DIR=$DIR/registry
REG_CONFIG=$REG_DIR/config.yml
REG_LOG=$REG_DIR/registry.log
REG_PIDFILE=$REG_DIR/registry.pid
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '%s\n' "$*"; }
die() {
	printf 'containerd-up: %s\n' "$*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"
# A bad subnet is only noticed by the bridge plugin at the first pod (CRI Status still says
# NetworkReady), so check it here.
[[ $CNI_SUBNET =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$ ]] ||
	die "PODSTEP_CNI_SUBNET=$CNI_SUBNET: expected an IPv4 CIDR such as 10.88.77.0/24"
{ [[ $REG_PORT =~ ^[0-9]{1,5}$ ]] && [ "$REG_PORT" -ge 1 ] && [ "$REG_PORT" -le 65535 ]; } ||
	die "PODSTEP_REGISTRY_PORT=$REG_PORT: expected a TCP port number such as 5055"
# A second harness beside the first (a dev one, another runtime) needs its own bridge and network.
[[ $CNI_BRIDGE =~ ^[a-z][a-z0-9-]{0,14}$ ]] ||
	die "PODSTEP_CNI_BRIDGE=$CNI_BRIDGE: expected an interface name of at most 15 characters such as podstep0"
[[ $CNI_NETWORK =~ ^[a-z][a-z0-9-]*$ ]] ||
	die "PODSTEP_CNI_NETWORK=$CNI_NETWORK: expected a CNI network name such as podstep"

HACK=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=lib/proc.sh
. "$HACK/lib/proc.sh"
# shellcheck source=lib/harness-packages.sh
. "$HACK/lib/harness-packages.sh"
# shellcheck source=lib/harness-containerd2.sh
. "$HACK/lib/harness-containerd2.sh"
# shellcheck source=lib/harness-runc.sh
. "$HACK/lib/harness-runc.sh"
# shellcheck source=lib/harness-tracing.sh
. "$HACK/lib/harness-tracing.sh"
# shellcheck source=lib/harness-config.sh
. "$HACK/lib/harness-config.sh"
# shellcheck source=lib/harness-cni.sh
. "$HACK/lib/harness-cni.sh"
# shellcheck source=lib/harness-images.sh
. "$HACK/lib/harness-images.sh"
# shellcheck source=lib/harness-registry.sh
. "$HACK/lib/harness-registry.sh"
# shellcheck source=lib/harness-start.sh
. "$HACK/lib/harness-start.sh"
tracing_init

# --- output: the last lines of stdout, parsed by hack/test.sh, cluster-up.sh and devcluster -------
print_endpoint() {
	log "CNI_SUBNET=$CNI_SUBNET"
	log "CNI_BRIDGE=$CNI_BRIDGE"
	log "PODSTEP_HARNESS_DIR=$DIR"
	log "PODSTEP_REGISTRY=$REG_ADDR"
	log "PODSTEP_REGISTRY_USER=$REG_USER"
	log "PODSTEP_REGISTRY_PASSWORD=$REG_PASSWORD"
	log "PODSTEP_REGISTRY_IMAGE=$PRIVATE_IMAGE"
	log "PODSTEP_RUNTIME=containerd $RUNNING_VERSION"
	log "PODSTEP_OCI_RUNTIME=$OCI_RUNTIME"
	log "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT"
}

# --- main ------------------------------------------------------------------------------------------
main() {
	ensure_packages
	ensure_containerd2
	ensure_runc
	if pid=$(running_pid) && socket_answers; then
		log "containerd already running (pid $pid, dir $DIR)"
		check_version
		check_tracing "$pid"
		host_sysctls
		ensure_images
		ensure_registry
		wait_ready
		print_endpoint
		return 0
	fi
	if pid=$(running_pid); then
		log "containerd pid $pid does not answer; restarting it"
		kill "$pid" 2>/dev/null || true
		sleep 1
		kill -9 "$pid" 2>/dev/null || true
	fi

	write_config
	host_sysctls
	start_containerd
	# images first need the socket; the CRI check needs the pause image only for pods.
	wait_socket "$pid"
	check_version
	check_tracing "$pid"
	ensure_images
	ensure_registry
	wait_ready "$pid"
	print_endpoint
}

main "$@"
