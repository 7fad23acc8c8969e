#!/usr/bin/env bash
# Stop the private containerd and the registry started by hack/containerd-up.sh and remove every
# trace of them: the registry process, containerd's containers and shims, the podstep0 bridge,
# the iptables rules its CNI network added, mounts under the folder, and the folder itself.
# Safe to run when nothing is up. Takes the variables containerd-up.sh took (PODSTEP_CONTAINERD=2
# for the containerd 2 harness, PODSTEP_HARNESS_DIR, PODSTEP_CNI_*).
set -euo pipefail

# DIR, CNI_*, CTR_BIN per PODSTEP_CONTAINERD (1.6 or 2)
. "$(dirname "${BASH_SOURCE[0]}")/harness-env.sh"
# shellcheck source=lib/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/proc.sh"

SOCK=$DIR/run/containerd.sock
CONFIG=$DIR/config.toml
PIDFILE=$DIR/containerd.pid
REG_CONFIG=$DIR/registry/config.yml
REG_PIDFILE=$DIR/registry/registry.pid

log() { printf 'containerd-down: %s\n' "$*"; }

[ "$(id -u)" = 0 ] || {
	echo "containerd-down: must run as root" >&2
	exit 1
}
case $DIR in
/ | /var | /var/lib | /tmp | /run | "") {
	echo "containerd-down: refusing to remove PODSTEP_HARNESS_DIR=$DIR" >&2
	exit 1
} ;;
esac

# stop WHAT SECONDS PIDFILE WORD: the pid in PIDFILE (if its argv still has WORD) and any process
# whose argv has WORD; SIGTERM, SECONDS, SIGKILL.
stop() {
	local pids=() p
	if p=$(pidfile_pid "$3" "$4"); then pids+=("$p"); fi
	while read -r p; do [ -n "$p" ] && pids+=("$p"); done < <(pids_with_arg "$4")
	[ ${#pids[@]} -eq 0 ] && return 0
	mapfile -t pids < <(printf '%s\n' "${pids[@]}" | sort -u)
	log "stopping $1 (pid ${pids[*]})"
	terminate "$2" "${pids[@]}"
}

# 0. the registry: any process serving our registry config
stop_registry() { stop "the registry" 5 "$REG_PIDFILE" "$REG_CONFIG"; }

# 1. best effort: remove all containers (CRI pods and ctr ones) through containerd itself
remove_containers() {
	[ -S "$SOCK" ] || return 0
	local ctr=$CTR_BIN # containerd 2's own ctr; Debian's (1.6) when its cache is gone
	command -v "$ctr" >/dev/null 2>&1 || ctr=ctr
	command -v "$ctr" >/dev/null 2>&1 || return 0
	timeout 5 "$ctr" -a "$SOCK" version >/dev/null 2>&1 || return 0
	local ns id
	for ns in $(timeout 10 "$ctr" -a "$SOCK" namespaces ls -q 2>/dev/null); do
		for id in $(timeout 10 "$ctr" -a "$SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
			timeout 10 "$ctr" -a "$SOCK" -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
		done
		for id in $(timeout 10 "$ctr" -a "$SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
			timeout 10 "$ctr" -a "$SOCK" -n "$ns" tasks rm -f "$id" >/dev/null 2>&1 || true
		done
		for id in $(timeout 10 "$ctr" -a "$SOCK" -n "$ns" containers ls -q 2>/dev/null); do
			timeout 10 "$ctr" -a "$SOCK" -n "$ns" containers rm "$id" >/dev/null 2>&1 || true
		done
	done
}

# 2. stop containerd: the pid in the pid file, and any other containerd using our config
stop_containerd() { stop containerd 10 "$PIDFILE" "$CONFIG"; }

# 3. shims of OUR containerd (containerd-shim-runc-v2 ... -address $SOCK), and what they run
kill_shims() {
	local p pids=()
	for p in $(pids_with_arg "$SOCK"); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep 'containerd-shim' >/dev/null; then
			pids+=("$p")
		fi
	done
	[ ${#pids[@]} -eq 0 ] && return 0
	log "killing shims (pid ${pids[*]})"
	# the shims' children (pause / container processes) first, then the shims
	for p in "${pids[@]}"; do
		pkill -9 -P "$p" 2>/dev/null || true
	done
	kill -9 "${pids[@]}" 2>/dev/null || true
	sleep 0.2
}

# 4. iptables rules of our CNI network: bridge ipMasq (CNI-<hash> chains, rule comment
#    'name: "podstep" id: ...') and portmap (CNI-DN-<hash> chains, comment 'dnat name: "podstep"')
clean_iptables() {
	command -v iptables-save >/dev/null 2>&1 || return 0
	local table save chains=() rule c
	for table in nat filter; do
		save=$(iptables-save -t "$table" 2>/dev/null) || continue
		# chains that are ours: CNI-* chains holding a rule with our network's comment or subnet
		mapfile -t chains < <(printf '%s\n' "$save" |
			grep -E "^-A CNI-[^ ]+ .*(name: \\\\\"$CNI_NETWORK\\\\\"|${CNI_SUBNET//./\\.})" |
			awk '{print $2}' | grep -vE '^CNI-HOSTPORT-' | sort -u)
		# delete rules that carry our comment or jump to one of our chains
		while read -r rule; do
			[ -n "$rule" ] || continue
			eval "iptables -t $table -D ${rule#-A }" 2>/dev/null || true
		done < <(printf '%s\n' "$save" | grep -E '^-A ' | while read -r rule; do
			if [[ $rule == *"name: \\\"$CNI_NETWORK\\\""* ]]; then
				echo "$rule"
				continue
			fi
			for c in "${chains[@]}"; do
				if [[ $rule == *" -j $c" || $rule == *" -j $c "* ]]; then
					echo "$rule"
					break
				fi
			done
		done)
		for c in "${chains[@]}"; do
			iptables -t "$table" -F "$c" 2>/dev/null || true
			iptables -t "$table" -X "$c" 2>/dev/null || true
		done
	done
	# portmap's shared chains: remove only when nothing is left in CNI-HOSTPORT-DNAT
	save=$(iptables-save -t nat 2>/dev/null) || return 0
	# (no 'grep -q' after a pipe anywhere here: with pipefail, the writer's SIGPIPE when grep -q
	# quits early would turn a match into a failure)
	if grep -q '^:CNI-HOSTPORT-DNAT' <<<"$save" &&
		! grep -q '^-A CNI-HOSTPORT-DNAT ' <<<"$save"; then
		while read -r rule; do
			eval "iptables -t nat -D ${rule#-A }" 2>/dev/null || true
		done < <(printf '%s\n' "$save" | grep -E '^-A [A-Z]+ .*-j CNI-HOSTPORT-(DNAT|MASQ|SETMARK)( |$)')
		for c in CNI-HOSTPORT-DNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK; do
			iptables -t nat -F "$c" 2>/dev/null || true
			iptables -t nat -X "$c" 2>/dev/null || true
		done
	fi
}

# 5. network namespaces of our pods. With netns_mounts_under_state_dir they live under
#    $DIR/state; older runs may have left /var/run/netns/cni-* bound to our (dead) pods:
#    those are the ones no process uses any more and whose pod config is in our folder.
#    Collected before the containers are removed (their records name the netns path).
OLD_NETNS=()
collect_netns() {
	[ -d "$DIR" ] || return 0
	mapfile -t OLD_NETNS < <(grep -rahoE '/var/run/netns/cni-[0-9a-f-]+' "$DIR/root" "$DIR/state" 2>/dev/null | sort -u)
}
clean_netns() {
	local ns
	for ns in "${OLD_NETNS[@]}"; do
		[ -e "$ns" ] || continue
		umount "$ns" 2>/dev/null || true
		rm -f "$ns"
	done
}

stop_registry
collect_netns
remove_containers
stop_containerd
kill_shims
clean_netns
unmount_under "$DIR"
if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
	ip link delete "$CNI_BRIDGE" || true
fi
clean_iptables
if [ -d "$DIR" ]; then
	rm -rf "$DIR"
fi
log "down ($DIR removed)"
