# shellcheck shell=bash disable=SC2034
# Sourced by cluster-up.sh and cluster-down.sh: WHERE a cluster lives, its ports and its two nodes.
# Every value has a CI default (hack/test.sh's cluster phase); a developer's cluster beside CI's
# sets its own folder, port base and harness endpoints (see hack/README.md, "Cluster").
#
#   PODSTEP_CLUSTER_DIR         folder of everything (default /var/lib/podstep-cluster)
#   PODSTEP_CLUSTER_PORT_BASE   first of the cluster's loopback/node ports (default 16400):
#                                 +0 etcd client, +1 etcd peer, +2 kube-apiserver,
#                                 +3 kube-controller-manager, +4 kube-scheduler,
#                                 +10/+11 kubelet port/healthz of node 1.6, +20/+21 of node 2,
#                                 +12/+22 the live page (--serve) of the podstep proxy in front
#                                 of node 1.6's / node 2's kubelet (PODSTEP_CLUSTER_PROXY)
#   PODSTEP_CLUSTER_ENDPOINT_16 the containerd 1.6 harness's CRI endpoint
#                               (default unix:///var/lib/podstep-harness/run/containerd.sock)
#   PODSTEP_CLUSTER_ENDPOINT_2  the containerd 2 harness's (default .../podstep-harness2/...)
#   PODSTEP_CLUSTER_NODE_16     node names (default podstep-node-16, podstep-node-2)
#   PODSTEP_CLUSTER_NODE_2
#   PODSTEP_CLUSTER_WAIT        seconds to wait for each readiness step (default 120)
#   PODSTEP_CLUSTER_PROXY       a podstep binary: run `podstep proxy` between each kubelet and its
#                               runtime (default: none, the kubelets talk to containerd directly)
#   PODSTEP_CLUSTER_PROXY_POD   with it, NS/NAME: the proxies follow and record that pod only
#   PODSTEP_CLUSTER_RECORD_DIR  with it, where each proxy records every pod it follows: DIR/NODE/
#                               NAMESPACE_NAME_UID.rec.gz (default $PODSTEP_CLUSTER_DIR/recordings,
#                               removed by down)
#   PODSTEP_CLUSTER_HELPER_IMAGE  the image of local-path-provisioner's helper pods (default the
#                               harnesses' docker.io/library/busybox:1.35: sh, mkdir, rm)
# Storage lives in the folder too: local-path-provisioner's volumes in $PODSTEP_CLUSTER_DIR/local-path,
# each node's mock CSI driver socket in NODE_DIR/csi/csi.sock, its registration in the node's
# NODE_DIR/root/plugins_registry. Neither listens on a port. With PODSTEP_CLUSTER_PROXY the node's
# proxy stands in front of csi.sock too (--csi: the mock's own socket is then
# NODE_DIR/csi/.csi.sock.podstep-driver) and records the kubelet's CSI calls with each pod.
#
# Sets: CLUSTER_DIR, PORT_BASE, ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT, CM_PORT,
# SCHED_PORT, NODES (16 2), and per node N in NODES: NODE_NAME_N, ENDPOINT_N, KUBELET_PORT_N,
# HEALTHZ_PORT_N, LIVE_PORT_N, RUNTIME_LABEL_N; CLUSTER_ID (the folder's base name, which names the nodes'
# cgroup roots: /CLUSTER_ID-NODE), PKI, KUBECONFIG_ADMIN; STORAGE_CLASS, LOCAL_PATH_DIR, BUSYBOX_IMAGE,
# CSI_DRIVER.

CLUSTER_DIR=${PODSTEP_CLUSTER_DIR:-/var/lib/podstep-cluster}
CLUSTER_DIR=${CLUSTER_DIR%/}
PORT_BASE=${PODSTEP_CLUSTER_PORT_BASE:-16400}
if ! [[ $PORT_BASE =~ ^[0-9]{4,5}$ ]] || [ "$PORT_BASE" -lt 1024 ] || [ "$PORT_BASE" -gt 65500 ]; then
	printf '%s: PODSTEP_CLUSTER_PORT_BASE=%s: expected a port number between 1024 and 65500 (it uses the next 23)\n' \
		"$(basename "$0" .sh)" "$PORT_BASE" >&2
	exit 1
fi
case $CLUSTER_DIR in
/* ) ;;
*)
	printf '%s: PODSTEP_CLUSTER_DIR=%s: expected an absolute path\n' "$(basename "$0" .sh)" "$CLUSTER_DIR" >&2
	exit 1
	;;
esac
CLUSTER_ID=$(basename "$CLUSTER_DIR")
[[ $CLUSTER_ID =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || {
	printf '%s: PODSTEP_CLUSTER_DIR=%s: its last element names cgroups; use letters, digits, . _ -\n' \
		"$(basename "$0" .sh)" "$CLUSTER_DIR" >&2
	exit 1
}
ETCD_PORT=$PORT_BASE
ETCD_PEER_PORT=$((PORT_BASE + 1))
APISERVER_PORT=$((PORT_BASE + 2))
CM_PORT=$((PORT_BASE + 3))
SCHED_PORT=$((PORT_BASE + 4))

NODES=(16 2)
NODE_NAME_16=${PODSTEP_CLUSTER_NODE_16:-podstep-node-16}
NODE_NAME_2=${PODSTEP_CLUSTER_NODE_2:-podstep-node-2}
ENDPOINT_16=${PODSTEP_CLUSTER_ENDPOINT_16:-unix:///var/lib/podstep-harness/run/containerd.sock}
ENDPOINT_2=${PODSTEP_CLUSTER_ENDPOINT_2:-unix:///var/lib/podstep-harness2/run/containerd.sock}
KUBELET_PORT_16=$((PORT_BASE + 10))
HEALTHZ_PORT_16=$((PORT_BASE + 11))
KUBELET_PORT_2=$((PORT_BASE + 20))
HEALTHZ_PORT_2=$((PORT_BASE + 21))
LIVE_PORT_16=$((PORT_BASE + 12))
LIVE_PORT_2=$((PORT_BASE + 22))
RUNTIME_LABEL_16=containerd-1.6
RUNTIME_LABEL_2=containerd-2
WAIT_SECONDS=${PODSTEP_CLUSTER_WAIT:-120}

PKI=$CLUSTER_DIR/pki
KUBECONFIG_ADMIN=$CLUSTER_DIR/admin.kubeconfig
# The cluster's Service range (the API server's own Service takes its first address). No
# kube-proxy runs: Service addresses are not reachable, but they are allocated as in any cluster.
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
# Storage: the default StorageClass (local-path-provisioner's) and the folder of its volumes; the
# mock CSI driver's name (the e2e mock's own) on every node.
STORAGE_CLASS=local-path
LOCAL_PATH_DIR=$CLUSTER_DIR/local-path
BUSYBOX_IMAGE=${PODSTEP_CLUSTER_HELPER_IMAGE:-docker.io/library/busybox:1.35}
CSI_DRIVER=io.kubernetes.storage.mock

# node_var N WHAT: the value of WHAT_N (NODE_NAME, ENDPOINT, KUBELET_PORT, HEALTHZ_PORT, LIVE_PORT, RUNTIME_LABEL)
node_var() { local v="${2}_$1"; printf '%s' "${!v}"; }
# node_dir N: the node's folder (kubelet root dir, config, certificates, logs)
node_dir() { printf '%s/nodes/%s' "$CLUSTER_DIR" "$(node_var "$1" NODE_NAME)"; }
# node_csi_socket N: the node's mock CSI driver's socket (its node and controller services)
node_csi_socket() { printf '%s/csi/csi.sock' "$(node_dir "$1")"; }
# node_cgroup N: the node's cgroupRoot (each kubelet has its own: kubepods and the QoS tiers below)
node_cgroup() { printf '/%s-%s' "$CLUSTER_ID" "$(node_var "$1" NODE_NAME)"; }

# alive, pids_with_arg, pidfile_pid, terminate, unmount_under, cgroup_dirs (the node's cgroup
# folder in every hierarchy)
# shellcheck source=lib/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/proc.sh"
