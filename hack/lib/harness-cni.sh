# shellcheck shell=bash
# hack/lib/harness-cni.sh: the CNI network (a bridge with host-local IPAM, then portmap) and the host
# sysctls pods need.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

cni_config() {
	cat >"$DIR/cni/10-$CNI_NETWORK.conflist.tmp" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$CNI_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$DIR/cni-data"
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
EOF
	mv "$DIR/cni/10-$CNI_NETWORK.conflist.tmp" "$DIR/cni/10-$CNI_NETWORK.conflist"
}

# hostPort on 127.0.0.1: portmap DNATs in nat OUTPUT and sets route_localnet=1 on the bridge
# itself (verified: with podstep0's route_localnet=0 a curl to 127.0.0.1:HOSTPORT times out), so
# the host-wide net.ipv4.conf.all.route_localnet is left alone. See README.
host_sysctls() {
	sysctl -qw net.ipv4.ip_forward=1
	modprobe br_netfilter 2>/dev/null || true
	if [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
		sysctl -qw net.bridge.bridge-nf-call-iptables=1
	fi
}
