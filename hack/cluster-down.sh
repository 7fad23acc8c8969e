#!/usr/bin/env bash
# Stop the cluster hack/cluster-up.sh started (same PODSTEP_CLUSTER_* variables) and remove every
# trace of it: the processes (local-path-provisioner, the kubelets, each node's mock CSI driver,
# then the scheduler, controller-manager, API server, etcd), the kubelets' pods on the two runtimes
# (stopped and removed through the CRI, so their network is torn down as the kubelet would:
# hack/crisweep; local-path's helper pods and volumes among them), mounts under the folder (secret and
# projected volumes' tmpfs), the nodes' cgroup roots, the bridges up made, the kubelets' iptables
# canary chains when no other kubelet runs, and the folder. The runtimes themselves stay up
# (hack/containerd-down.sh stops them). Safe when nothing is up; run it as often as you like.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/cluster-env.sh"

log() { printf 'cluster-down: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || {
	echo "cluster-down: must run as root" >&2
	exit 1
}
case $CLUSTER_DIR in
/ | /var | /var/lib | /tmp | /run | /root | /home | "")
	echo "cluster-down: refusing to remove PODSTEP_CLUSTER_DIR=$CLUSTER_DIR" >&2
	exit 1
	;;
esac
FAILED=0

# stop NAME MARKER [NAME MARKER...]: for each, the pid file's process if its argv still has MARKER,
# and any other process whose argv has MARKER; all at once: SIGTERM, up to 10 s, SIGKILL.
stop() {
	local pids=() names=() p name marker
	while [ $# -ge 2 ]; do
		name=$1 marker=$2
		shift 2
		if p=$(pidfile_pid "$CLUSTER_DIR/run/$name.pid" "$marker"); then
			pids+=("$p")
			names+=("$name")
		fi
		while read -r p; do [ -n "$p" ] && pids+=("$p") && names+=("$name"); done < <(pids_with_arg "$marker")
	done
	[ ${#pids[@]} -eq 0 ] && return 0
	log "stopping $(printf '%s\n' "${names[@]}" | sort -u | tr '\n' ' ')(pid $(printf '%s\n' "${pids[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//'))"
	terminate 10 "${pids[@]}"
}

# 1. local-path-provisioner (it makes helper pods), the kubelets (so none restarts a pod while it is
#    swept), the mock CSI drivers, then the control plane, then etcd
stop local-path-provisioner "--kubeconfig=$CLUSTER_DIR/local-path.kubeconfig"
kubelets=()
for n in "${NODES[@]}"; do
	kubelets+=("kubelet-$(node_var "$n" NODE_NAME)" "--config=$(node_dir "$n")/kubelet-config.yaml")
done
stop "${kubelets[@]}"
csimocks=()
for n in "${NODES[@]}"; do
	csimocks+=("csimock-$(node_var "$n" NODE_NAME)" "--endpoint=$(node_csi_socket "$n")")
done
stop "${csimocks[@]}"
# the podstep proxies between kubelets and runtimes (PODSTEP_CLUSTER_PROXY), if any
proxies=()
for n in "${NODES[@]}"; do
	proxies+=("proxy-$(node_var "$n" NODE_NAME)" "unix://$(node_dir "$n")/cri-proxy.sock")
done
stop "${proxies[@]}"
stop kube-scheduler "--kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig" \
	kube-controller-manager "--kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig" \
	kube-apiserver "--tls-cert-file=$PKI/apiserver.crt"
stop etcd "--data-dir=$CLUSTER_DIR/etcd"

# 2. the kubelets' pods on each runtime: every sandbox whose pod UID has a folder in the kubelet's
#    pods dir (podstep's own sandboxes, and other kubelets', are left alone)
for n in "${NODES[@]}"; do
	pods=$(node_dir "$n")/root/pods
	if [ ! -d "$pods" ] || [ -z "$(ls -A "$pods" 2>/dev/null)" ]; then
		continue
	fi
	ep=$(node_var "$n" ENDPOINT)
	if [ ! -S "${ep#unix://}" ]; then
		log "node $n: its runtime $ep is down; its pods went with it (hack/containerd-down.sh)"
		continue
	fi
	sweep=$CLUSTER_DIR/bin/crisweep
	if [ -x "$sweep" ]; then
		"$sweep" -endpoint "$ep" -pods "$pods" || FAILED=1
	else
		(cd "$HERE/.." && go run ./hack/crisweep -endpoint "$ep" -pods "$pods") || FAILED=1
	fi
done

# 3. mounts under the folder (the kubelets' tmpfs volumes, subpath binds), deepest first
unmount_under "$CLUSTER_DIR"

# 4. the nodes' cgroup roots (pod cgroups are empty once the pods are gone), deepest first
for n in "${NODES[@]}"; do
	while read -r d; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
		[ ! -d "$d" ] || {
			log "cgroup $d is not empty (processes: $(cat "$d"/cgroup.procs "$d"/*/cgroup.procs 2>/dev/null | head -c 200 | tr '\n' ' '))"
			FAILED=1
		}
	done < <(cgroup_dirs "$(node_cgroup "$n")")
done

# 5. bridges cluster-up made (no pod had made them yet), if still unused
if [ -f "$CLUSTER_DIR/bridges-made" ]; then
	while read -r br; do
		if [ -z "$br" ] || [ ! -d "/sys/class/net/$br" ]; then
			continue
		fi
		if [ -z "$(ls -A "/sys/class/net/$br/brif" 2>/dev/null)" ]; then
			ip link delete "$br" 2>/dev/null || true
		fi
	done < <(sort -u "$CLUSTER_DIR/bridges-made")
fi

# 6. the kubelet's iptables chains (KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT, and KUBE-FIREWALL with
#    its INPUT/OUTPUT jumps: "block incoming localnet connections"), only when no kubelet runs
#    anymore on this host (they are one per host, shared by every kubelet)
kubelet_running() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = kubelet ] && alive "${p#/proc/}" && return 0
	done
	return 1
}
if ! kubelet_running; then
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null 2>&1 || continue
		for chain in INPUT OUTPUT; do
			while "$ipt" -w -t filter -D "$chain" -j KUBE-FIREWALL 2>/dev/null; do :; done
		done
		for t in mangle nat filter; do
			for c in KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT KUBE-FIREWALL; do
				if "$ipt" -w -t "$t" -F "$c" 2>/dev/null; then
					"$ipt" -w -t "$t" -X "$c" 2>/dev/null || true
				fi
			done
		done
	done
fi

# 7. the folder
[ ! -d "$CLUSTER_DIR" ] || rm -rf "$CLUSTER_DIR" || FAILED=1
if [ "$FAILED" = 0 ]; then
	log "down ($CLUSTER_DIR removed)"
else
	log "down, with leftovers (see above)"
	exit 1
fi
