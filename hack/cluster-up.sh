#!/usr/bin/env bash
# Start a real Kubernetes v1.37.0 cluster on this machine for podstep's cluster tests:
#   etcd v3.6.16, kube-apiserver, kube-controller-manager, kube-scheduler (built once from the Go
#   module proxy: hack/etcd-build.sh, hack/control-plane-build.sh) on loopback, and TWO nodes: the
#   kubelet v1.37.0 (hack/kubelet-build.sh) once on the containerd 1.6 harness and once on the
#   containerd 2 harness (hack/containerd-up.sh; both must be up), each with its own root dir,
#   ports, cgroup root, client certificate (system:node:NAME) and serving certificate.
# Certificates (one CA; front-proxy CA) and the service-account key are made here with openssl.
#
#   PODSTEP_CONTAINERD=1.6 hack/containerd-up.sh; PODSTEP_CONTAINERD=2 hack/containerd-up.sh
#   eval "$(hack/cluster-up.sh | tail -n 1)"      # KUBECONFIG=/var/lib/podstep-cluster/admin.kubeconfig
#   kubectl get nodes                            # podstep-node-16, podstep-node-2: Ready (any kubectl;
#                                                # bash hack/control-plane-build.sh kubectl builds v1.37.0)
#   hack/cluster-down.sh
#
# Ready when: both nodes Ready, the default ServiceAccount and the kube-root-ca.crt ConfigMap in
# namespace default exist. Prints NODE_16, NODE_2, ENDPOINT_16, ENDPOINT_2, KUBECTL (if built), ... and,
# always last, KUBECONFIG=... Idempotent: what already runs (same folder) is kept.
# Variables: hack/cluster-env.sh. Everything lives in $PODSTEP_CLUSTER_DIR; hack/cluster-down.sh
# removes every trace. See hack/README.md, "Cluster".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/cluster-env.sh"

log() { printf '%s\n' "$*"; }
die() {
	printf 'cluster-up: %s\n' "$*" >&2
	exit 1
}
START=$SECONDS
elapsed() { printf '%d s' $((SECONDS - START)); }

[ "$(id -u)" = 0 ] || die "must run as root (kubelets manage cgroups and mounts)"
for c in openssl jq curl findmnt setsid ip; do
	command -v "$c" >/dev/null 2>&1 || die "needs $c (apt-get install openssl jq curl util-linux iproute2)"
done
if [ -x /usr/local/go/bin/go ]; then
	export PATH=/usr/local/go/bin:$PATH
fi

# --- the two runtimes ------------------------------------------------------------------------
# Each node's runtime is a harness of hack/containerd-up.sh: its folder is the endpoint's
# grandparent (DIR/run/containerd.sock). Its CNI bridge's gateway address (made here when no pod
# made it yet) is the node's InternalIP: the kubelet refuses a loopback node IP, and the API server
# reaches the kubelet there (traffic to a local address of our own bridge).
declare -A NODE_IP HARNESS_DIR
for n in "${NODES[@]}"; do
	ep=$(node_var "$n" ENDPOINT)
	[[ $ep == unix:///* ]] || die "PODSTEP_CLUSTER_ENDPOINT_$n=$ep: expected unix:///.../run/containerd.sock (a hack/containerd-up.sh harness)"
	sock=${ep#unix://}
	[ -S "$sock" ] || die "node $n: no runtime at $ep: start its harness first (PODSTEP_CONTAINERD=${n/16/1.6} hack/containerd-up.sh)"
	hdir=$(dirname "$(dirname "$sock")")
	conf=$(find "$hdir/cni" -maxdepth 1 -name '*.conflist' 2>/dev/null | sort | head -n 1)
	[ -n "$conf" ] || die "node $n: no CNI conflist in $hdir/cni (is $hdir a hack/containerd-up.sh harness?)"
	br=$(jq -r '.plugins[] | select(.type == "bridge") | .bridge' "$conf")
	subnet=$(jq -r '.plugins[] | select(.type == "bridge") | .ipam.ranges[0][0].subnet' "$conf")
	[[ $subnet =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)/([0-9]+)$ ]] || die "node $n: cannot read the subnet of $conf"
	# the first address of the subnet: host-local's default gateway
	ipn=$(((BASH_REMATCH[1] << 24 | BASH_REMATCH[2] << 16 | BASH_REMATCH[3] << 8 | BASH_REMATCH[4]) + 1))
	NODE_IP[$n]=$((ipn >> 24 & 255)).$((ipn >> 16 & 255)).$((ipn >> 8 & 255)).$((ipn & 255))
	HARNESS_DIR[$n]=$hdir
	if ! ip -4 -o addr show dev "$br" 2>/dev/null | grep -qF " ${NODE_IP[$n]}/${BASH_REMATCH[5]} "; then
		ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge
		ip addr add "${NODE_IP[$n]}/${BASH_REMATCH[5]}" dev "$br"
		mkdir -p "$CLUSTER_DIR"
		echo "$br" >>"$CLUSTER_DIR/bridges-made" # cluster-down deletes it if no pod uses it
	fi
	ip link set "$br" up
done
[ "${NODE_IP[16]}" != "${NODE_IP[2]}" ] || die "both nodes' harnesses use the same CNI subnet; give each its own (PODSTEP_CNI_SUBNET)"

# --- binaries ------------------------------------------------------------------------------------
log "binaries (built once, cached in ~/.cache/podstep):"
ETCD=$(bash "$HERE/etcd-build.sh" | tail -n 1)
K8S_BIN=$(bash "$HERE/control-plane-build.sh" | tail -n 1)
KUBELET=$(bash "$HERE/kubelet-build.sh" | tail -n 1)
CSIMOCK=$(bash "$HERE/csi-mock-build.sh" | tail -n 1)
log "  $ETCD"
log "  $K8S_BIN/{kube-apiserver,kube-controller-manager,kube-scheduler}"
log "  $KUBELET"
log "  $CSIMOCK"
mkdir -p "$CLUSTER_DIR/bin" "$CLUSTER_DIR/logs" "$CLUSTER_DIR/run" "$PKI"
# crisweep: cluster-down's CRI sweep of the kubelets' pods (built now, so that down needs no go)
if [ ! -x "$CLUSTER_DIR/bin/crisweep" ]; then
	(cd "$REPO_ROOT" && go build -o "$CLUSTER_DIR/bin/crisweep" ./hack/crisweep) || die "go build ./hack/crisweep failed"
fi
log "binaries ready ($(elapsed))"

# --- certificates --------------------------------------------------------------------------------
# ECDSA P-256 keys (fast to make), 10 years. One CA signs the API server's serving certificate,
# every client certificate (admin: system:masters; controller-manager, scheduler; one per node,
# system:node:NAME in system:nodes, for the Node authorizer; the API server's kubelet client) and
# the kubelets' serving certificates (the API server checks them: --kubelet-certificate-authority).
# The front-proxy CA signs the aggregator's client certificate.
key() { [ -f "$1" ] || openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; chmod 600 "$1"; }
ca() { # ca NAME CN
	key "$PKI/$1.key"
	[ -f "$PKI/$1.crt" ] || openssl req -x509 -new -key "$PKI/$1.key" -subj "/CN=$2" -days 3650 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "$PKI/$1.crt" 2>/dev/null
}
cert() { # cert NAME CA SUBJECT USAGE [SANS]: USAGE clientAuth|serverAuth
	local name=$1 ca=$2 subj=$3 usage=$4 sans=${5:-} ext
	[ -f "$PKI/$name.crt" ] && return 0
	key "$PKI/$name.key"
	ext=$(mktemp)
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usage"
		[ -z "$sans" ] || echo "subjectAltName=$sans"
	} >"$ext"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" 2>/dev/null |
		openssl x509 -req -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial -days 3650 -sha256 \
			-extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$ext"
	[ -s "$PKI/$name.crt" ] || die "openssl could not make $PKI/$name.crt"
}
ca ca podstep-cluster-ca
ca front-proxy-ca podstep-front-proxy-ca
cert apiserver ca "/CN=kube-apiserver" serverAuth \
	"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$SERVICE_IP"
cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin ca "/O=system:masters/CN=podstep-admin" clientAuth
cert controller-manager ca "/CN=system:kube-controller-manager" clientAuth
cert scheduler ca "/CN=system:kube-scheduler" clientAuth
cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
for n in "${NODES[@]}"; do
	name=$(node_var "$n" NODE_NAME)
	cert "node-$name" ca "/O=system:nodes/CN=system:node:$name" clientAuth
	cert "kubelet-$name" ca "/CN=$name" serverAuth "DNS:$name,IP:${NODE_IP[$n]}"
done
# the service-account token signing key (and its public half, for verification)
key "$PKI/sa.key"
[ -f "$PKI/sa.pub" ] || openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null

# kubeconfig FILE USER: a kubeconfig for USER's certificate (PKI/USER.crt) against this API server
kubeconfig() {
	cat >"$1.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: podstep
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: podstep
  context:
    cluster: podstep
    user: $2
current-context: podstep
EOF
	mv "$1.tmp" "$1"
}
kubeconfig "$KUBECONFIG_ADMIN" admin
kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" controller-manager
kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" scheduler
log "certificates and kubeconfigs in $PKI ($(elapsed))"

# --- processes -----------------------------------------------------------------------------------
# start NAME MARKER CMD...: unless a process whose argv has MARKER (an argument naming this
# cluster's folder) already runs, start CMD with setsid in the background, log and pid under
# $CLUSTER_DIR. Prints nothing; the readiness checks follow.
start() {
	local name=$1 marker=$2 p
	shift 2
	for p in $(pids_with_arg "$marker"); do
		if alive "$p"; then
			log "$name: already running (pid $p)"
			return 0
		fi
	done
	setsid "$@" >>"$CLUSTER_DIR/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$CLUSTER_DIR/run/$name.pid"
	log "$name: started (pid $!, log $CLUSTER_DIR/logs/$name.log)"
}
# wait_for WHAT LOGNAME CMD...: until CMD succeeds, at most WAIT_SECONDS; on timeout, the log's tail.
wait_for() {
	local what=$1 name=$2 deadline=$((SECONDS + WAIT_SECONDS)) p
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ -n "$name" ] && [ -f "$CLUSTER_DIR/run/$name.pid" ]; then
			p=$(cat "$CLUSTER_DIR/run/$name.pid")
			alive "$p" || {
				tail -n 25 "$CLUSTER_DIR/logs/$name.log" >&2
				die "$name exited while waiting for $what (log: $CLUSTER_DIR/logs/$name.log)"
			}
		fi
		if [ $SECONDS -ge $deadline ]; then
			[ -z "$name" ] || tail -n 25 "$CLUSTER_DIR/logs/$name.log" >&2
			die "$what: not after ${WAIT_SECONDS}s${name:+ (log: $CLUSTER_DIR/logs/$name.log)}"
		fi
		sleep 0.3
	done
	log "$what ($(elapsed))"
}
# api PATH: GET PATH from the API server as the admin (curl: the cluster needs no kubectl).
api() { curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$APISERVER_PORT$1"; }
# port_free PORT: nothing listens on it, or one of our processes does (a re-run)
check_port() {
	local port=$1 marker=$2 line p
	line=$(ss -Hltnp "sport = :$port" 2>/dev/null | head -n 1)
	[ -z "$line" ] && return 0
	for p in $(pids_with_arg "$marker"); do
		[[ $line == *"pid=$p,"* ]] && return 0
	done
	die "port $port is taken by another process ($line); choose another PODSTEP_CLUSTER_PORT_BASE"
}

# etcd: one member, loopback, plain HTTP (nothing but this API server reaches it).
check_port "$ETCD_PORT" "--data-dir=$CLUSTER_DIR/etcd"
check_port "$ETCD_PEER_PORT" "--data-dir=$CLUSTER_DIR/etcd"
start etcd "--data-dir=$CLUSTER_DIR/etcd" "$ETCD" --name=podstep "--data-dir=$CLUSTER_DIR/etcd" \
	"--listen-client-urls=http://127.0.0.1:$ETCD_PORT" "--advertise-client-urls=http://127.0.0.1:$ETCD_PORT" \
	"--listen-peer-urls=http://127.0.0.1:$ETCD_PEER_PORT" "--initial-advertise-peer-urls=http://127.0.0.1:$ETCD_PEER_PORT" \
	"--initial-cluster=podstep=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls= \
	--unsafe-no-fsync --log-level=warn
wait_for "etcd ready on 127.0.0.1:$ETCD_PORT" etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

# kube-apiserver: loopback only, so --endpoint-reconciler-type=none (it will not advertise
# 127.0.0.1 in the kubernetes Service's endpoints). Authorization Node,RBAC; admission: the
# defaults plus NodeRestriction; service-account tokens (TokenRequest) signed with sa.key.
check_port "$APISERVER_PORT" "--tls-cert-file=$PKI/apiserver.crt"
start kube-apiserver "--tls-cert-file=$PKI/apiserver.crt" "$K8S_BIN/kube-apiserver" \
	"--etcd-servers=http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 "--secure-port=$APISERVER_PORT" \
	--endpoint-reconciler-type=none "--tls-cert-file=$PKI/apiserver.crt" "--tls-private-key-file=$PKI/apiserver.key" \
	"--client-ca-file=$PKI/ca.crt" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--allow-privileged=true "--service-cluster-ip-range=$SERVICE_CIDR" \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	"--service-account-key-file=$PKI/sa.pub" "--service-account-signing-key-file=$PKI/sa.key" \
	"--kubelet-client-certificate=$PKI/apiserver-kubelet-client.crt" "--kubelet-client-key=$PKI/apiserver-kubelet-client.key" \
	"--kubelet-certificate-authority=$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
	"--requestheader-client-ca-file=$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	"--proxy-client-cert-file=$PKI/front-proxy-client.crt" "--proxy-client-key-file=$PKI/front-proxy-client.key" \
	"--cert-dir=$CLUSTER_DIR/apiserver" --profiling=false
wait_for "kube-apiserver ready on https://127.0.0.1:$APISERVER_PORT" kube-apiserver api /readyz

# kube-controller-manager: its default controllers (service accounts and their tokens,
# root-ca-cert-publisher: kube-root-ca.crt in every namespace; deployment, replicaset, garbage
# collector, node lifecycle, namespace, ...), each with its own service account's credentials.
check_port "$CM_PORT" "--kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig"
start kube-controller-manager "--kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig" "$K8S_BIN/kube-controller-manager" \
	"--kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig" \
	"--authentication-kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig" \
	"--authorization-kubeconfig=$CLUSTER_DIR/controller-manager.kubeconfig" \
	--bind-address=127.0.0.1 "--secure-port=$CM_PORT" --leader-elect=false \
	"--service-account-private-key-file=$PKI/sa.key" "--root-ca-file=$PKI/ca.crt" \
	"--cluster-signing-cert-file=$PKI/ca.crt" "--cluster-signing-key-file=$PKI/ca.key" \
	--use-service-account-credentials=true --controllers='*' --allocate-node-cidrs=false \
	"--service-cluster-ip-range=$SERVICE_CIDR" "--cert-dir=$CLUSTER_DIR/controller-manager" --profiling=false
check_port "$SCHED_PORT" "--kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig"
start kube-scheduler "--kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig" "$K8S_BIN/kube-scheduler" \
	"--kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig" \
	"--authentication-kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig" \
	"--authorization-kubeconfig=$CLUSTER_DIR/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 "--secure-port=$SCHED_PORT" --leader-elect=false --profiling=false

# --- the two kubelets --------------------------------------------------------------------------
# As test/integration's kubelet (failCgroupV1: false, failSwapOn: false, cgroupfs), but registered
# with the API server, serving TLS on the node's IP with client-certificate authentication and
# webhook authorization (the API server's /nodes/NAME/proxy/configz goes through it), its own
# cgroupRoot (two kubelets on one host each manage their own kubepods tree), root dir, pod logs dir,
# the cluster DNS a real cluster's kubelets have (the .10 of the service range; no DNS server answers there:
# pods only get it in their resolv.conf, and podstep run --pod reads it from configz)
# and volume plugin dir. Image GC and the disk eviction thresholds are relaxed so that a full disk
# never makes a kubelet delete the harness's images (the harness and other tests use them).
for n in "${NODES[@]}"; do
	name=$(node_var "$n" NODE_NAME)
	nd=$(node_dir "$n")
	cg=$(node_cgroup "$n")
	mkdir -p "$nd/root" "$nd/pod-logs" "$nd/volume-plugins"
	# the cgroup root must exist in every hierarchy before the kubelet starts; a new cpuset
	# cgroup (v1) starts with no CPUs and memory nodes: give it its parent's
	while read -r d; do
		mkdir -p "$d"
		for f in cpuset.cpus cpuset.mems; do
			[ ! -f "$d/$f" ] || [ -n "$(cat "$d/$f")" ] || cat "$(dirname "$d")/$f" >"$d/$f"
		done
	done < <(cgroup_dirs "$cg")
	kubeconfig "$nd/kubelet.kubeconfig" "node-$name"
	# PODSTEP_CLUSTER_PROXY=PODSTEP_BINARY: `podstep proxy` between this kubelet and its runtime,
	# every CRI call forwarded and shown as the pod's steps (-o json lines in logs/proxy-NODE.log),
	# every pod recorded into ${PODSTEP_CLUSTER_RECORD_DIR:-$CLUSTER_DIR/recordings}/NODE/
	# NAMESPACE_NAME_UID.rec.gz (--record-dir: each appears whole once the kubelet removed the pod's
	# sandbox, or when the proxy stops). With PODSTEP_CLUSTER_PROXY_POD=NS/NAME it follows that pod
	# only. PODSTEP_CLUSTER_PROXY_ARGS are more flags for it, split on spaces; "--kubeconfig ADMIN" is
	# replaced by the cluster's admin kubeconfig (e.g. PODSTEP_CLUSTER_PROXY_ARGS="--kubeconfig ADMIN":
	# the proxy reads each pod's spec). Each proxy serves its live page (--serve) on
	# 127.0.0.1:LIVE_PORT (PORT_BASE+12 for node 1.6, +22 for node 2; printed as LIVE_URL_N):
	# the newest pod its kubelet creates (TestProxyLivePageInChromium).
	# The mock CSI driver (see "storage" below) starts before the proxy and the kubelet: the proxy
	# takes its socket over (--csi), so the kubelet, which dials the socket the registration names,
	# only ever reaches the driver through the proxy, from its first NodeGetInfo on.
	csisock=$(node_csi_socket "$n")
	reg=$nd/root/plugins_registry
	[ ${#reg} -le $((107 - ${#CSI_DRIVER} - 10)) ] ||
		die "PODSTEP_CLUSTER_DIR=$CLUSTER_DIR is too long: the mock's registration socket $reg/$CSI_DRIVER-reg.sock passes the 107 bytes of a unix socket path"
	start "csimock-$name" "--endpoint=$csisock" "$CSIMOCK" "--endpoint=$csisock" "--name=$CSI_DRIVER" "--registration=$reg"
	wait_for "mock CSI driver $CSI_DRIVER of $name on unix://$csisock" "csimock-$name" test -S "$csisock"
	kubelet_ep=$(node_var "$n" ENDPOINT)
	if [ -n "${PODSTEP_CLUSTER_PROXY:-}" ]; then
		[ -x "$PODSTEP_CLUSTER_PROXY" ] || die "PODSTEP_CLUSTER_PROXY=$PODSTEP_CLUSTER_PROXY: not an executable podstep binary"
		psock=$nd/cri-proxy.sock
		recdir=${PODSTEP_CLUSTER_RECORD_DIR:-$CLUSTER_DIR/recordings}/$name
		mkdir -p "$recdir" && chmod 0700 "$recdir"
		check_port "$(node_var "$n" LIVE_PORT)" "unix://$psock"
		pargs=(--listen "unix://$psock" --upstream "$(node_var "$n" ENDPOINT)" --auto -o json --record-dir "$recdir"
			--serve "127.0.0.1:$(node_var "$n" LIVE_PORT)" --csi "$CSI_DRIVER=unix://$csisock" --csi-registry "$reg")
		[ -z "${PODSTEP_CLUSTER_PROXY_POD:-}" ] || pargs+=(--pod "$PODSTEP_CLUSTER_PROXY_POD")
		if [ -n "${PODSTEP_CLUSTER_PROXY_ARGS:-}" ]; then
			read -r -a extra <<<"$PODSTEP_CLUSTER_PROXY_ARGS"
			for a in "${extra[@]}"; do
				[ "$a" = ADMIN ] && a=$KUBECONFIG_ADMIN
				pargs+=("$a")
			done
		fi
		# its CSI takeover marker in the cluster's folder (PODSTEP_CSI_MARKERS), not /run: a proxy
		# cluster-down had to kill leaves it there, and down removes it with the folder
		start "proxy-$name" "unix://$psock" env PODSTEP_CSI_MARKERS="$CLUSTER_DIR/run/csi-markers" \
			"$PODSTEP_CLUSTER_PROXY" proxy "${pargs[@]}"
		wait_for "podstep proxy for $name on unix://$psock" "proxy-$name" test -S "$psock"
		# taken over: the driver's own socket has its second name (internal/proxy.MovedPath), the
		# proxy's socket is at $csisock, before the kubelet starts
		wait_for "podstep proxy for $name in front of $CSI_DRIVER (unix://$csisock)" "proxy-$name" \
			test -S "$(dirname "$csisock")/.$(basename "$csisock").podstep-driver"
		kubelet_ep=unix://$psock
	fi
	cat >"$nd/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: $kubelet_ep
imageServiceEndpoint: $kubelet_ep
address: ${NODE_IP[$n]}
port: $(node_var "$n" KUBELET_PORT)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(node_var "$n" HEALTHZ_PORT)
tlsCertFile: $PKI/kubelet-$name.crt
tlsPrivateKeyFile: $PKI/kubelet-$name.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
failSwapOn: false
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: $cg
podLogsDir: $nd/pod-logs
volumePluginDir: $nd/volume-plugins
clusterDNS: [${CLUSTER_DNS:-10.96.0.10}]
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
EOF
	check_port "$(node_var "$n" KUBELET_PORT)" "--config=$nd/kubelet-config.yaml"
	check_port "$(node_var "$n" HEALTHZ_PORT)" "--config=$nd/kubelet-config.yaml"
	start "kubelet-$name" "--config=$nd/kubelet-config.yaml" "$KUBELET" "--config=$nd/kubelet-config.yaml" \
		"--kubeconfig=$nd/kubelet.kubeconfig" "--root-dir=$nd/root" "--hostname-override=$name" \
		"--node-ip=${NODE_IP[$n]}" "--node-labels=podstep.dev/runtime=$(node_var "$n" RUNTIME_LABEL)" --v=2
done

# --- readiness -------------------------------------------------------------------------------------
node_ready() { [ "$(api "/api/v1/nodes/$1" 2>/dev/null | jq -r '.status.conditions[]? | select(.type == "Ready") | .status')" = True ]; }
for n in "${NODES[@]}"; do
	name=$(node_var "$n" NODE_NAME)
	wait_for "kubelet $name healthz" "kubelet-$name" curl -fsS "http://127.0.0.1:$(node_var "$n" HEALTHZ_PORT)/healthz"
done
for n in "${NODES[@]}"; do
	name=$(node_var "$n" NODE_NAME)
	wait_for "node $name Ready" "kubelet-$name" node_ready "$name"
done
wait_for "ServiceAccount default/default" kube-controller-manager api /api/v1/namespaces/default/serviceaccounts/default
wait_for "ConfigMap default/kube-root-ca.crt" kube-controller-manager api /api/v1/namespaces/default/configmaps/kube-root-ca.crt
wait_for "kube-scheduler healthz" kube-scheduler curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
log "nodes ready in $(elapsed)"

# --- storage: local-path-provisioner (the default StorageClass) and the mock CSI driver ----------
# As kind ships it: rancher/local-path-provisioner v0.0.30 (hack/local-path-build.sh), its RBAC and
# ConfigMap of deploy/local-path-storage.yaml in namespace local-path-storage, the StorageClass
# local-path (provisioner rancher.io/local-path, WaitForFirstConsumer, reclaim Delete) made the
# default one. What differs from kind's Deployment: the provisioner runs as a process on this host
# (no image of it exists here), with a kubeconfig holding a token of its own ServiceAccount
# (TokenRequest, 24 h) where kind's pod has the in-cluster config; its config file is written here
# (kind mounts the ConfigMap); its helper pods (which make and remove each volume's directory with
# the ConfigMap's setup and teardown scripts: sh, mkdir, rm) run the harness's busybox image, and the
# volumes live in $LOCAL_PATH_DIR (kind: /var/local-path-provisioner on the node). kind names the
# class "standard"; this is upstream's name.
api_create() { # api_create PATH YAML: POST the object; one that exists already (409) is kept
	local code out=$CLUSTER_DIR/run/api-create.out
	code=$(curl -sS -o "$out" -w '%{http_code}' --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		-H 'Content-Type: application/yaml' -X POST --data-binary "$2" "https://127.0.0.1:$APISERVER_PORT$1") || true
	case $code in
	200 | 201 | 202 | 409) ;;
	*) die "POST $1: HTTP $code: $(head -c 600 "$out")" ;;
	esac
}
LOCAL_PATH=$(bash "$HERE/local-path-build.sh" | tail -n 1)
mkdir -p "$LOCAL_PATH_DIR"
LP_NS=local-path-storage LP_SA=local-path-provisioner-service-account
api_create /api/v1/namespaces "{apiVersion: v1, kind: Namespace, metadata: {name: $LP_NS}}"
api_create "/api/v1/namespaces/$LP_NS/serviceaccounts" "{apiVersion: v1, kind: ServiceAccount, metadata: {name: $LP_SA, namespace: $LP_NS}}"
api_create "/apis/rbac.authorization.k8s.io/v1/namespaces/$LP_NS/roles" "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: local-path-provisioner-role, namespace: $LP_NS}
rules:
- {apiGroups: [''], resources: [pods], verbs: [get, list, watch, create, patch, update, delete]}"
api_create /apis/rbac.authorization.k8s.io/v1/clusterroles "
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: local-path-provisioner-role}
rules:
- {apiGroups: [''], resources: [nodes, persistentvolumeclaims, configmaps, pods, pods/log], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [persistentvolumes], verbs: [get, list, watch, create, patch, update, delete]}
- {apiGroups: [''], resources: [events], verbs: [create, patch]}
- {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}"
api_create "/apis/rbac.authorization.k8s.io/v1/namespaces/$LP_NS/rolebindings" "
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local-path-provisioner-bind, namespace: $LP_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: local-path-provisioner-role}
subjects: [{kind: ServiceAccount, name: $LP_SA, namespace: $LP_NS}]"
api_create /apis/rbac.authorization.k8s.io/v1/clusterrolebindings "
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: local-path-provisioner-bind}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-path-provisioner-role}
subjects: [{kind: ServiceAccount, name: $LP_SA, namespace: $LP_NS}]"
api_create /apis/storage.k8s.io/v1/storageclasses "
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $STORAGE_CLASS
  annotations: {storageclass.kubernetes.io/is-default-class: 'true'}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete"
LP_CONFIG=$(jq -cn --arg p "$LOCAL_PATH_DIR" '{nodePathMap: [{node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [$p]}]}')
printf '%s\n' "$LP_CONFIG" >"$CLUSTER_DIR/local-path-config.json"
api_create "/api/v1/namespaces/$LP_NS/configmaps" "$(jq -n --arg ns "$LP_NS" --arg config "$LP_CONFIG" --arg image "$BUSYBOX_IMAGE" '{
	apiVersion: "v1", kind: "ConfigMap", metadata: {name: "local-path-config", namespace: $ns},
	data: {
		"config.json": $config,
		setup: "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n",
		teardown: "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n",
		"helperPod.yaml": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: helper-pod\nspec:\n  priorityClassName: system-node-critical\n  tolerations:\n  - key: node.kubernetes.io/disk-pressure\n    operator: Exists\n    effect: NoSchedule\n  containers:\n  - name: helper-pod\n    image: " + $image + "\n    imagePullPolicy: IfNotPresent\n")
	}}')"
# its ServiceAccount's token (the provisioner's own identity, as in kind's pod), in its kubeconfig:
# a new one whenever the provisioner is not running (a token lives 24 h)
LP_KUBECONFIG=$CLUSTER_DIR/local-path.kubeconfig
lp_running=
for p in $(pids_with_arg "--kubeconfig=$LP_KUBECONFIG"); do alive "$p" && lp_running=1; done
if [ -z "$lp_running" ] || [ ! -s "$LP_KUBECONFIG" ]; then
	token=$(curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -H 'Content-Type: application/json' -X POST \
		--data-binary '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":86400}}' \
		"https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/$LP_NS/serviceaccounts/$LP_SA/token" | jq -r .status.token) ||
		die "TokenRequest for $LP_NS/$LP_SA failed"
	{ [ -n "$token" ] && [ "$token" != null ]; } || die "TokenRequest for $LP_NS/$LP_SA: no token"
	(
		umask 077
		cat >"$LP_KUBECONFIG.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: podstep
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $LP_SA
  user: {token: "$token"}
contexts:
- name: podstep
  context: {cluster: podstep, user: $LP_SA, namespace: $LP_NS}
current-context: podstep
KC
	)
	mv "$LP_KUBECONFIG.tmp" "$LP_KUBECONFIG"
	unset token
fi
# ready when its log says "Provisioner started" (--debug) once more than before this start (the log
# is appended to), or at once when it was running already
LP_LOG=$CLUSTER_DIR/logs/local-path-provisioner.log
lp_before=$(grep -c 'Provisioner started' "$LP_LOG" 2>/dev/null || true)
[ -z "$lp_running" ] || lp_before=0
lp_started() { [ "$(grep -c 'Provisioner started' "$LP_LOG" 2>/dev/null || true)" -gt "${lp_before:-0}" ]; }
start local-path-provisioner "--kubeconfig=$LP_KUBECONFIG" env "POD_NAMESPACE=$LP_NS" "SERVICE_ACCOUNT_NAME=$LP_SA" \
	"$LOCAL_PATH" --debug start "--config=$CLUSTER_DIR/local-path-config.json" "--kubeconfig=$LP_KUBECONFIG" \
	"--namespace=$LP_NS" "--service-account-name=$LP_SA" --configmap-name=local-path-config "--helper-image=$BUSYBOX_IMAGE"
wait_for "local-path-provisioner started (StorageClass $STORAGE_CLASS, volumes in $LOCAL_PATH_DIR)" local-path-provisioner lp_started

# The mock CSI driver (hack/csi-mock-build.sh: the e2e mock of Kubernetes v1.37.0) on each node
# (started before the node's proxy and kubelet, above), as a CSI driver's DaemonSet pod would run
# there: its node (and controller) service on the node's csi.sock, registered with that node's
# kubelet through the kubelet's plugins_registry (csimock serves the registration socket
# node-driver-registrar would); with PODSTEP_CLUSTER_PROXY the node's proxy stands in front of
# csi.sock (--csi) and records the kubelet's CSI calls with each pod. Its CSIDriver: no attach (no
# external-attacher runs here; the mock then wants no publish_context "device"), pod info on mount,
# persistent and inline (Ephemeral) volumes. It keeps volumes in memory: a CSI PersistentVolume's
# volumeHandle must come from that node's mock's CreateVolume (no external-provisioner runs here).
api_create /apis/storage.k8s.io/v1/csidrivers "
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $CSI_DRIVER}
spec: {attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: [Persistent, Ephemeral]}"
csi_registered() { api "/apis/storage.k8s.io/v1/csinodes/$1" | jq -e --arg d "$CSI_DRIVER" '[.spec.drivers[]?.name] | index($d)'; }
for n in "${NODES[@]}"; do
	name=$(node_var "$n" NODE_NAME)
	wait_for "CSI driver $CSI_DRIVER registered with $name's kubelet (CSINode)" "csimock-$name" csi_registered "$name"
done
log "storage ready ($(elapsed))"

log "cluster up in $(elapsed)"

# The registries of the harnesses (for pull-secret tests): read from their config.
for n in "${NODES[@]}"; do
	reg=$(sed -n 's/^  addr: //p' "${HARNESS_DIR[$n]}/registry/config.yml" 2>/dev/null | head -n 1)
	[ -z "$reg" ] || log "REGISTRY_$n=$reg"
done
log "PODSTEP_CLUSTER_DIR=$CLUSTER_DIR"
log "STORAGE_CLASS=$STORAGE_CLASS"
log "LOCAL_PATH_DIR=$LOCAL_PATH_DIR"
log "CSI_DRIVER=$CSI_DRIVER"
# kubectl of the cluster's version, if built (bash hack/control-plane-build.sh kubectl): not by default.
if [ -x "$K8S_BIN/kubectl" ]; then log "KUBECTL=$K8S_BIN/kubectl"; fi
for n in "${NODES[@]}"; do
	log "NODE_$n=$(node_var "$n" NODE_NAME)"
	log "NODE_IP_$n=${NODE_IP[$n]}"
	log "ENDPOINT_$n=$(node_var "$n" ENDPOINT)"
	log "CSI_ENDPOINT_$n=unix://$(node_csi_socket "$n")"
	log "CSI_REGISTRY_$n=$(node_dir "$n")/root/plugins_registry"
	[ -z "${PODSTEP_CLUSTER_PROXY:-}" ] || log "KUBELET_ENDPOINT_$n=unix://$(node_dir "$n")/cri-proxy.sock"
	[ -z "${PODSTEP_CLUSTER_PROXY:-}" ] || log "LIVE_URL_$n=http://127.0.0.1:$(node_var "$n" LIVE_PORT)/"
	[ -z "${PODSTEP_CLUSTER_PROXY:-}" ] || log "RECORD_DIR_$n=${PODSTEP_CLUSTER_RECORD_DIR:-$CLUSTER_DIR/recordings}/$(node_var "$n" NODE_NAME)"
done
log "KUBECONFIG=$KUBECONFIG_ADMIN"
