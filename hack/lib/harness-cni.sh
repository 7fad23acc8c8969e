# shellcheck shell=bash
# hack/lib/harness-cni.sh: the CNI network (a bridge with host-local IPAM, then portmap; with
# PODSTEP_CNI_HANG_POD, then podstep-hang-pod) and the host sysctls pods need.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

# hang_plugin: podstep-hang-pod, a chained CNI plugin for the tests of a hung CNI ADD on a node
# (harness-env.sh, PODSTEP_CNI_HANG_POD). Its ADD for a pod whose name starts with the network's
# "podPrefix" waits until "releaseDir"/release-NAMESPACE_NAME exists (at most 30 min, or until the
# harness is gone), then fails; for any other pod it passes the previous plugin's result on. Its
# waiting runs in a subshell that holds stdout: when the runtime kills the plugin (the CRI call's
# context ended), the runtime still waits for that output, so the ADD stays hung as a blocked
# plugin's does. The conf on stdin is read with one jq (a sed on it once passed on more than the
# previous result, and every pod's ADD failed): the prefix, the dir and the previous result, a line
# each.
hang_plugin() {
	cat <<'EOF'
#!/bin/sh
conf=$(cat)
case $CNI_COMMAND in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}'; exit 0 ;;
ADD) ;;
*) exit 0 ;;
esac
name=$(printf '%s' "$CNI_ARGS" | tr ';' '\n' | sed -n 's/^K8S_POD_NAME=//p')
ns=$(printf '%s' "$CNI_ARGS" | tr ';' '\n' | sed -n 's/^K8S_POD_NAMESPACE=//p')
{ read -r prefix; read -r dir; read -r prev; } <<CONF
$(printf '%s' "$conf" | jq -r '(.podPrefix // ""), (.releaseDir // ""), (.prevResult | tojson)')
CONF
if [ -n "$prefix" ] && [ "${name#"$prefix"}" != "$name" ]; then
	(i=0; while [ -d "$dir" ] && [ ! -e "$dir/release-${ns}_$name" ] && [ $i -lt 18000 ]; do sleep 0.1; i=$((i+1)); done
	echo '{"cniVersion":"1.0.0","code":11,"msg":"podstep-hang-pod: released"}')
	exit 1
fi
printf '%s\n' "$prev"
EOF
}

# cni_bin: with PODSTEP_CNI_HANG_POD, $DIR/cni-bin: podstep-hang-pod and a link to each plugin of
# /usr/lib/cni (containerd 1.6 takes one CNI bin dir).
cni_bin() {
	[ -n "$CNI_HANG_POD" ] || return 0
	rm -rf "$DIR/cni-bin"
	mkdir -p "$DIR/cni-bin" "$DIR/cni-hang"
	local p
	for p in /usr/lib/cni/*; do
		ln -s "$p" "$DIR/cni-bin/$(basename "$p")"
	done
	hang_plugin >"$DIR/cni-bin/podstep-hang-pod"
	chmod 755 "$DIR/cni-bin/podstep-hang-pod"
}

cni_config() {
	cni_bin
	local hang=
	[ -z "$CNI_HANG_POD" ] ||
		hang=$(printf ',\n    {"type": "podstep-hang-pod", "podPrefix": "%s", "releaseDir": "%s"}' "$CNI_HANG_POD" "$DIR/cni-hang")
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
    }$hang
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
