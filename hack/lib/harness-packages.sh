# shellcheck shell=bash
# hack/lib/harness-packages.sh: the Debian packages the harness needs, installed when missing.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

# ensure_packages: apt-get install what is missing (hack/lib/cache.sh apt_need).
ensure_packages() {
	local -A want=(
		[runc]=runc [/usr/lib/cni/bridge]=containernetworking-plugins
		[/bin/busybox]=busybox-static [umoci]=umoci [ip]=iproute2 [iptables]=iptables
		[findmnt]=util-linux [setsid]=util-linux
		[docker-registry]=docker-registry [htpasswd]=apache2-utils [skopeo]=skopeo [curl]=curl
	)
	local missing=() cmd
	# containerd 2 is built (ensure_containerd2); its shim and ctr come with it.
	[ "$RUNTIME" = 2 ] || want[containerd]=containerd
	# podstep-hang-pod (PODSTEP_CNI_HANG_POD) reads its conf with jq.
	[ -z "$CNI_HANG_POD" ] || want[jq]=jq
	for cmd in "${!want[@]}"; do
		if [[ $cmd == /* ]]; then
			[ -x "$cmd" ] || missing+=("${want[$cmd]}")
		else
			command -v "$cmd" >/dev/null 2>&1 || missing+=("${want[$cmd]}")
		fi
	done
	# busybox (the dynamic one) also provides /bin/busybox; we need the static one.
	if [ -x /bin/busybox ] && ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep 'ok installed' >/dev/null; then
		missing+=(busybox-static)
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
	log "installing: ${missing[*]}"
	apt_need "${missing[@]}"
}
