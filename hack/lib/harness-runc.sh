# shellcheck shell=bash
# shellcheck disable=SC2034 # RUNC_BIN and OCI_RUNTIME are read by containerd-up.sh and harness-config.sh
# hack/lib/harness-runc.sh: the OCI runtime: Debian's runc for 1.6, hack/runc-build.sh's for 2.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

# 1.1.5. Sets RUNC_BIN, and OCI_RUNTIME to what `runc --version` says. 1.6 keeps Debian's runc.
RUNC_BIN=
OCI_RUNTIME=
ensure_runc() {
	if [ "$RUNTIME" != 2 ]; then
		OCI_RUNTIME="runc $(runc --version 2>/dev/null | sed -n 's/^runc version //p' | head -n 1)"
		return 0
	fi
	local out
	out=$(bash "$REPO_ROOT/hack/runc-build.sh") || die "hack/runc-build.sh failed"
	printf '%s\n' "$out" | sed '$d'
	RUNC_BIN=$(printf '%s\n' "$out" | tail -n 1)
	[ -x "$RUNC_BIN" ] || die "hack/runc-build.sh did not print a runc binary (got '$RUNC_BIN')"
	OCI_RUNTIME="runc $("$RUNC_BIN" --version | sed -n 's/^runc version //p' | head -n 1)"
}
