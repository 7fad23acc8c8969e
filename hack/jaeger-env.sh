# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are set for the scripts that source this file
# Sourced by jaeger-up.sh and jaeger-down.sh: where podstep's test Jaeger lives and listens.
# Sets J_DIR, J_CONFIG, J_LOG, J_PIDFILE, the ports J_GRPC, J_HTTP, J_QUERY, J_QUERY_GRPC,
# J_HEALTH, and the functions alive PID and jaeger_pid.
J_DIR=${PODSTEP_JAEGER_DIR:-/var/lib/podstep-jaeger}
J_CONFIG=$J_DIR/config.yaml
J_LOG=$J_DIR/jaeger.log
J_PIDFILE=$J_DIR/jaeger.pid
J_GRPC=${PODSTEP_JAEGER_OTLP_GRPC_PORT:-14317}
J_HTTP=${PODSTEP_JAEGER_OTLP_HTTP_PORT:-14318}
J_QUERY=${PODSTEP_JAEGER_QUERY_PORT:-14686}
J_QUERY_GRPC=${PODSTEP_JAEGER_QUERY_GRPC_PORT:-14685}
J_HEALTH=${PODSTEP_JAEGER_HEALTH_PORT:-14133}

# alive PID (not a zombie), wait_started (hack/lib/proc.sh)
# shellcheck source=lib/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/proc.sh"

# jaeger_pid: the pid of OUR jaeger (its pid file, and its argv names our config).
jaeger_pid() {
	local pid
	[ -f "$J_PIDFILE" ] || return 1
	pid=$(cat "$J_PIDFILE")
	[ -n "$pid" ] && alive "$pid" || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "file:$J_CONFIG" >/dev/null || return 1
	echo "$pid"
}
