# shellcheck shell=bash
# hack/lib/proc.sh: finding and stopping the processes, mounts and cgroups a harness or a cluster
# left, shared by containerd-up/-down.sh and cluster-env/-up/-down.sh. Sourced; needs the
# caller's log MESSAGE.
#
#   alive PID             the process exists and is not a zombie (PID 1 on these machines does
#                         not reap orphans: 'kill -0' succeeds on a zombie)
#   pids_with_arg WORD    pids of the processes whose argv has WORD as one element
#   pidfile_pid FILE WORD the pid in FILE when that process's argv still has WORD (pids get reused)
#   terminate SECONDS PID...
#                         SIGTERM, wait up to SECONDS for all to be gone, then SIGKILL (logged)
#   wait_started NAME PID LOG SECONDS WHAT CHECK...
#                         until CHECK succeeds, at most SECONDS; dies with LOG's tail when PID (if
#                         not "") exits first ("NAME exited during start-up") or time runs out
#                         ("WHAT did not answer within SECONDS s")
#   unmount_under DIR     lazily unmounts every mount at or below DIR, deepest first
#   cgroup_dirs CGROUP    the folder of CGROUP in every cgroup v1 hierarchy (and v2, if mounted)

alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

pids_with_arg() {
	local want=$1 p
	for p in /proc/[0-9]*; do
		[ -r "$p/cmdline" ] || continue
		if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -xF -- "$want" >/dev/null; then
			echo "${p#/proc/}"
		fi
	done
}

pidfile_pid() {
	local p
	[ -f "$1" ] || return 1
	p=$(cat "$1")
	[ -n "$p" ] && tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -xF -- "$2" >/dev/null || return 1
	echo "$p"
}

terminate() {
	local seconds=$1 p _
	shift
	[ $# -gt 0 ] || return 0
	kill "$@" 2>/dev/null || true
	for _ in $(seq $((seconds * 5))); do
		for p in "$@"; do
			alive "$p" && break
			p=
		done
		[ -z "$p" ] && return 0
		sleep 0.2
	done
	log "still running after $seconds s: SIGKILL (pid $*)"
	kill -9 "$@" 2>/dev/null || true
	sleep 0.2
}

wait_started() {
	local name=$1 pid=$2 logf=$3 seconds=$4 what=$5 deadline=$((SECONDS + $4))
	shift 5
	until "$@"; do
		if [ -n "$pid" ] && ! alive "$pid"; then
			tail -n 30 "$logf" >&2 || true
			die "$name exited during start-up (log: $logf)"
		fi
		[ $SECONDS -lt $deadline ] || {
			tail -n 30 "$logf" >&2 || true
			die "$what did not answer within ${seconds}s (log: $logf)"
		}
		sleep 0.2
	done
}

unmount_under() {
	local m
	[ -d "$1" ] || return 0
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(findmnt -rn -o TARGET | grep -E "^$1(/|$)" | sort -r)
}

cgroup_dirs() {
	local m
	while read -r m; do
		printf '%s%s\n' "$m" "$1"
	done < <(findmnt -rn -t cgroup,cgroup2 -o TARGET)
}
