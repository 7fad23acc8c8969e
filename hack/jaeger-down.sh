#!/usr/bin/env bash
# Stop the Jaeger hack/jaeger-up.sh started (same PODSTEP_JAEGER_DIR) and remove its folder.
# Safe when nothing is up. SIGTERM, 5 s, SIGKILL; only the process whose argv names our config.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/jaeger-env.sh"

if pid=$(jaeger_pid); then
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	echo "jaeger stopped (pid $pid)"
fi
case $J_DIR in
/ | "") ;;
*) rm -rf "$J_DIR" ;;
esac
