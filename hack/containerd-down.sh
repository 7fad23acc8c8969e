#!/usr/bin/env bash
# Stop the private containerd and the registry started by hack/containerd-up.sh and remove every
# trace of them: the registry process, containerd's containers and shims, the podstep0 bridge,
# the iptables rules its CNI network added, mounts under the folder, and the folder itself.
# Safe to run when nothing is up. Takes the variables containerd-up.sh took (PODSTEP_CONTAINERD=2
# for the containerd 2 harness, PODSTEP_HARNESS_DIR, PODSTEP_CNI_*).
set -euo pipefail

# DIR, CNI_*, CTR_BIN per PODSTEP_CONTAINERD (1.6 or 2)
. "$(dirname "${BASH_SOURCE[0]}")/harness-env.sh"

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

# pids of processes whose command line contains WORD (exact argv element match)
pids_with_arg() {
	local want=$1 p
	for p in /proc/[0-9]*; do
		[ -r "$p/cmdline" ] || continue
		if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -xF -- "$want" >/dev/null; then
			echo "${p#/proc/}"
		fi
	done
}

# alive PID: the process exists and is not a zombie (PID 1 on these machines does not reap
# orphans; 'kill -0' succeeds on a zombie).
alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# 0. the registry: the pid in its pid file (if it still runs our config) and any process whose
#    argv has our registry config; SIGTERM, 5 s, SIGKILL.
stop_registry() {
	local pids=() p i
	if [ -f "$REG_PIDFILE" ]; then
		p=$(cat "$REG_PIDFILE")
		if [ -n "$p" ] && tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -F -- "serve $REG_CONFIG" >/dev/null; then
			pids+=("$p")
		fi
	fi
	while read -r p; do [ -n "$p" ] && pids+=("$p"); done < <(pids_with_arg "$REG_CONFIG")
	[ ${#pids[@]} -eq 0 ] && return 0
	mapfile -t pids < <(printf '%s\n' "${pids[@]}" | sort -u)
	log "stopping the registry (pid ${pids[*]})"
	kill "${pids[@]}" 2>/dev/null || true
	for i in $(seq 25); do
		for p in "${pids[@]}"; do
			alive "$p" && break
			p=
		done
		[ -z "$p" ] && return 0
		sleep 0.2
	done
	kill -9 "${pids[@]}" 2>/dev/null || true
}

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
stop_containerd() {
	local pids=() p i
	if [ -f "$PIDFILE" ]; then
		p=$(cat "$PIDFILE")
		if [ -n "$p" ] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -- "--config $CONFIG" >/dev/null; then
			pids+=("$p")
		fi
	fi
	while read -r p; do [ -n "$p" ] && pids+=("$p"); done < <(pids_with_arg "$CONFIG")
	[ ${#pids[@]} -eq 0 ] && return 0
	mapfile -t pids < <(printf '%s\n' "${pids[@]}" | sort -u)
	log "stopping containerd (pid ${pids[*]})"
	kill "${pids[@]}" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "${pids[@]}" 2>/dev/null || return 0
		[ "$i" = 50 ] || sleep 0.2
	done
	kill -9 "${pids[@]}" 2>/dev/null || true
	sleep 0.2
}

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

unmount_all() {
	local m
	[ -d "$DIR" ] || return 0
	# deepest first
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(findmnt -rn -o TARGET | grep -E "^$DIR(/|$)" | sort -r)
}

stop_registry
collect_netns
remove_containers
stop_containerd
kill_shims
clean_netns
unmount_all
if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
	ip link delete "$CNI_BRIDGE" || true
fi
clean_iptables
if [ -d "$DIR" ]; then
	rm -rf "$DIR"
fi
log "down ($DIR removed)"
