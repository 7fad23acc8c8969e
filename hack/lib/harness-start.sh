# shellcheck shell=bash
# hack/lib/harness-start.sh: starting containerd and waiting for it: its pid and socket, the
# version it reports, and readiness (podstep info's CRI Status, else ctr).
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

ctr_() { "$CTR_BIN" -a "$SOCK" "$@"; }

# running_pid: the pid of OUR containerd (its pid file, and its argv still names our config).
running_pid() {
	local pid
	pid=$(pidfile_pid "$PIDFILE" "$CONFIG") && alive "$pid" && echo "$pid"
}

socket_answers() { [ -S "$SOCK" ] && timeout 5 "$CTR_BIN" -a "$SOCK" version >/dev/null 2>&1; }

# server_version: the version the running containerd reports ('ctr version', Server section).
server_version() { timeout 5 "$CTR_BIN" -a "$SOCK" version 2>/dev/null | sed -n '/^Server:/,$s/^ *Version: *//p' | head -n 1; }

# check_version: the containerd on our socket is the one asked for (PODSTEP_CONTAINERD), not a
# harness of the other runtime left in the same folder.
RUNNING_VERSION=
check_version() {
	RUNNING_VERSION=$(server_version)
	case $RUNTIME:$RUNNING_VERSION in
	1.6:1.6.* | 2:"${CONTAINERD2_VERSION#v}" | 2:"$CONTAINERD2_VERSION") ;;
	*) die "containerd at $SOCK reports version '${RUNNING_VERSION}', want $(want_version) (PODSTEP_CONTAINERD=${PODSTEP_CONTAINERD:-1.6}); stop it with hack/containerd-down.sh and the same variables" ;;
	esac
	log "containerd version $RUNNING_VERSION"
}
want_version() { if [ "$RUNTIME" = 2 ]; then echo "$CONTAINERD2_VERSION"; else echo 1.6.x; fi; }

# PODSTEP_INFO: the podstep binary used for the CRI readiness check. PODSTEP_BIN overrides;
# otherwise cmd/podstep is built (once, cached by go) into $DIR/bin when cmd/podstep/info.go exists.
PODSTEP_INFO=
PODSTEP_INFO_WHY=
find_podstep_info() {
	local bin=${PODSTEP_BIN:-} help
	if [ -z "$bin" ]; then
		if [ ! -f "$REPO_ROOT/cmd/podstep/info.go" ]; then
			PODSTEP_INFO_WHY="cmd/podstep/info.go does not exist yet"
			return 1
		fi
		command -v go >/dev/null 2>&1 || {
			PODSTEP_INFO_WHY="no go toolchain"
			return 1
		}
		mkdir -p "$DIR/bin"
		if ! (cd "$REPO_ROOT" && go build -o "$DIR/bin/podstep" ./cmd/podstep) >"$DIR/bin/build.log" 2>&1; then
			PODSTEP_INFO_WHY="go build ./cmd/podstep failed (see $DIR/bin/build.log)"
			return 1
		fi
		bin=$DIR/bin/podstep
	fi
	if ! help=$("$bin" info --help 2>&1) || [[ $help != *--runtime-endpoint* || $help != *--wait* ]]; then
		PODSTEP_INFO_WHY="'podstep info --help' has no --runtime-endpoint/--wait"
		return 1
	fi
	PODSTEP_INFO=$bin
}

# wait_socket [PID]: until containerd's socket answers, at most WAIT_SECONDS; dies when PID (the
# containerd just started) exits first.
wait_socket() {
	wait_started containerd "${1:-}" "$LOG" "$WAIT_SECONDS" "containerd socket $SOCK" socket_answers
}

# start_containerd: a new containerd in the background (setsid), its pid in $PIDFILE; sets pid.
start_containerd() {
	rm -f "$SOCK" "$SOCK.ttrpc" "$DIR/run/debug.sock"
	if [ -n "$SHIM_DIR" ]; then
		# containerd 2 finds containerd-shim-runc-v2 on its PATH: ours first (Debian's 1.6 shim
		# may be in /usr/bin).
		local otel=()
		mapfile -t otel < <(tracing_env)
		env PATH="$SHIM_DIR:$PATH" "${otel[@]}" setsid "$CONTAINERD_BIN" --config "$CONFIG" >>"$LOG" 2>&1 </dev/null &
	else
		setsid "$CONTAINERD_BIN" --config "$CONFIG" >>"$LOG" 2>&1 </dev/null &
	fi
	pid=$!
	echo "$pid" >"$PIDFILE"
	log "containerd started (pid $pid, config $CONFIG, log $LOG)"
}

# wait_ready [PID]: waits until the CRI runtime is ready. Prefers podstep's own CRI Status check. Prefers podstep's own CRI Status check.
wait_ready() {
	local deadline=$((SECONDS + WAIT_SECONDS))
	wait_socket "${1:-}"
	if find_podstep_info; then
		log "readiness: CRI Status via 'podstep info' (RuntimeReady and NetworkReady)"
		local out
		if ! out=$("$PODSTEP_INFO" info --runtime-endpoint "$ENDPOINT" --wait "${WAIT_SECONDS}s" 2>&1); then
			printf '%s\n' "$out" >&2
			die "CRI runtime not ready (podstep info failed; log: $LOG)"
		fi
		printf '%s\n' "$out" | sed 's/^/  /'
	else
		log "readiness: 'ctr version' answers, 'ctr plugins ls' shows cri ok, CNI config present (no CRI check: $PODSTEP_INFO_WHY)"
		[ -f "$DIR/cni/10-$CNI_NETWORK.conflist" ] || die "CNI config $DIR/cni/10-$CNI_NETWORK.conflist missing"
		until ctr_ plugins ls 2>/dev/null | grep -E '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$' >/dev/null; do
			[ $SECONDS -lt $deadline ] || die "containerd's CRI plugin is not 'ok' after ${WAIT_SECONDS}s (ctr plugins ls; log: $LOG)"
			sleep 0.2
		done
	fi
}
