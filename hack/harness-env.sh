# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are set for the scripts that source this file
# Sourced by containerd-up.sh and containerd-down.sh: WHICH containerd a harness runs and WHERE
# it lives. One harness per runtime; each has its own folder, socket, CNI network and registry,
# so both can run side by side (see hack/README.md, "Two runtimes").
#
#   PODSTEP_CONTAINERD=1.6  (default) Debian's containerd 1.6, from the containerd package
#   PODSTEP_CONTAINERD=2    containerd v2.4.2 with its runc shim and ctr, built from the Go module
#                           proxy once into $PODSTEP_CACHE_DIR/containerd-v2.4.2/bin
#
# Sets: RUNTIME (1.6 or 2), DIR, CNI_SUBNET, CNI_BRIDGE, CNI_NETWORK, REG_PORT, CONTAINERD_BIN,
# CTR_BIN, SHIM_DIR (the folder put first on containerd's PATH; "" for 1.6) and
# CONTAINERD2_VERSION, C2_CACHE, CNI_HANG_POD and CNI_BIN_DIR. The PODSTEP_* variables override the
# per-runtime defaults.

# shellcheck source=lib/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"
CONTAINERD2_VERSION=v2.4.2
C2_CACHE=$(cache_dir "containerd-$CONTAINERD2_VERSION")

case ${PODSTEP_CONTAINERD:-1.6} in
1 | 1.6)
	RUNTIME=1.6
	_dir=/var/lib/podstep-harness _subnet=10.88.77.0/24 _bridge=podstep0 _network=podstep _port=5055
	CONTAINERD_BIN=containerd
	CTR_BIN=ctr
	SHIM_DIR=
	;;
2 | 2.4 | 2.4.2 | v2.4.2)
	RUNTIME=2
	_dir=/var/lib/podstep-harness2 _subnet=10.88.78.0/24 _bridge=podstep2 _network=podstep2 _port=5056
	CONTAINERD_BIN=$C2_CACHE/bin/containerd
	CTR_BIN=$C2_CACHE/bin/ctr
	SHIM_DIR=$C2_CACHE/bin
	;;
*)
	printf '%s: PODSTEP_CONTAINERD=%s: expected 1.6 (Debian'"'"'s containerd) or 2 (containerd %s)\n' \
		"$(basename "$0" .sh)" "$PODSTEP_CONTAINERD" "$CONTAINERD2_VERSION" >&2
	exit 1
	;;
esac

DIR=${PODSTEP_HARNESS_DIR:-$_dir}
CNI_SUBNET=${PODSTEP_CNI_SUBNET:-$_subnet}
CNI_BRIDGE=${PODSTEP_CNI_BRIDGE:-$_bridge}
CNI_NETWORK=${PODSTEP_CNI_NETWORK:-$_network}
REG_PORT=${PODSTEP_REGISTRY_PORT:-$_port}
unset _dir _subnet _bridge _network _port
# PODSTEP_CNI_HANG_POD=PREFIX: the network's chain ends with podstep-hang-pod (hack/lib/harness-cni.sh),
# whose ADD for a pod named PREFIX... hangs (a CNI plugin that never answers, as containerd 9947
# and 12438 saw) until $DIR/cni-hang/release-NAMESPACE_NAME exists; other pods pass through. The
# CNI plugins are then looked up in $DIR/cni-bin (the plugin and a link to each of /usr/lib/cni's).
# The cluster's node harnesses set it (hack/test.sh's node_env): test/cluster's name-is-reserved test.
CNI_HANG_POD=${PODSTEP_CNI_HANG_POD:-}
CNI_BIN_DIR=/usr/lib/cni
[ -z "$CNI_HANG_POD" ] || CNI_BIN_DIR=$DIR/cni-bin
