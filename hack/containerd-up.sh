#!/usr/bin/env bash
# Start a private containerd (CRI) for podstep's tests, offline but for the Go module proxy.
#
#   hack/containerd-up.sh                        Debian's containerd 1.6 (the package)
#   PODSTEP_CONTAINERD=2 hack/containerd-up.sh   containerd v2.4.2, built once from the Go module
#                                                proxy into ~/.cache/podstep (hack/harness-env.sh)
#
# Everything lives in ONE folder, ${PODSTEP_HARNESS_DIR:-/var/lib/podstep-harness} (containerd 2:
# /var/lib/podstep-harness2); the two runtimes' harnesses can run side by side.
# It also runs a private image registry on loopback (Debian's docker-registry, htpasswd auth,
# data under $DIR/registry) holding one image, for the image pull secret tests.
# The last lines of stdout name the runtime (PODSTEP_RUNTIME=containerd 1.6.20~ds1) and, always last,
#   CONTAINER_RUNTIME_ENDPOINT=unix://$DIR/run/containerd.sock
# so callers can:  eval "$(hack/containerd-up.sh | tail -1)"
# Idempotent: a second run finds containerd and the registry healthy and only re-prints.
# See hack/README.md.
set -euo pipefail

# DIR, CNI_*, REG_PORT and the containerd binaries, per PODSTEP_CONTAINERD (1.6 or 2)
. "$(dirname "${BASH_SOURCE[0]}")/harness-env.sh"
BUSYBOX_IMAGE=docker.io/library/busybox:1.35
PAUSE_IMAGE=podstep.local/pause:1.0
WAIT_SECONDS=${PODSTEP_HARNESS_WAIT:-30}
# The registry: loopback only, fixed test credentials (they guard nothing but this throwaway
# registry; the tests check that the password never shows in podstep's output).
REG_ADDR=127.0.0.1:$REG_PORT
REG_USER=podstep
REG_PASSWORD=s3cret-Podstep-Registry-Pw
PRIVATE_REPO=podstep/private-busybox
PRIVATE_TAG=1.0
PRIVATE_IMAGE=$REG_ADDR/$PRIVATE_REPO:$PRIVATE_TAG

SOCK=$DIR/run/containerd.sock
ENDPOINT=unix://$SOCK
CONFIG=$DIR/config.toml
LOG=$DIR/containerd.log
PIDFILE=$DIR/containerd.pid
REG_DIR=$DIR/registry
REG_CONFIG=$REG_DIR/config.yml
REG_LOG=$REG_DIR/registry.log
REG_PIDFILE=$REG_DIR/registry.pid
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '%s\n' "$*"; }
die() {
	printf 'containerd-up: %s\n' "$*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"
# A bad subnet is only noticed by the bridge plugin at the first pod (CRI Status still says
# NetworkReady), so check it here.
[[ $CNI_SUBNET =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$ ]] ||
	die "PODSTEP_CNI_SUBNET=$CNI_SUBNET: expected an IPv4 CIDR such as 10.88.77.0/24"
{ [[ $REG_PORT =~ ^[0-9]{1,5}$ ]] && [ "$REG_PORT" -ge 1 ] && [ "$REG_PORT" -le 65535 ]; } ||
	die "PODSTEP_REGISTRY_PORT=$REG_PORT: expected a TCP port number such as 5055"
# A second harness beside the first (a dev one, another runtime) needs its own bridge and network.
[[ $CNI_BRIDGE =~ ^[a-z][a-z0-9-]{0,14}$ ]] ||
	die "PODSTEP_CNI_BRIDGE=$CNI_BRIDGE: expected an interface name of at most 15 characters such as podstep0"
[[ $CNI_NETWORK =~ ^[a-z][a-z0-9-]*$ ]] ||
	die "PODSTEP_CNI_NETWORK=$CNI_NETWORK: expected a CNI network name such as podstep"

# --- packages --------------------------------------------------------------------------------
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
	local out
	out=$(mktemp)
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		die "apt-get install ${missing[*]} failed"
	fi
	rm -f "$out"
}

# --- containerd 2: built from the Go module proxy, cached ----------------------------------------
C2_MODULE=github.com/containerd/containerd/v2

# containerd2_works: the cached containerd, ctr and shim are there and say they are the pinned
# version (a cache from another build, or half written, is rebuilt).
containerd2_works() {
	local b
	for b in containerd ctr containerd-shim-runc-v2; do
		[ -x "$C2_CACHE/bin/$b" ] || return 1
	done
	[[ $("$C2_CACHE/bin/containerd" --version 2>/dev/null) == *" $CONTAINERD2_VERSION "* ]] &&
		[[ $("$C2_CACHE/bin/ctr" --version 2>/dev/null) == *" $CONTAINERD2_VERSION" ]] &&
		[[ $("$C2_CACHE/bin/containerd-shim-runc-v2" -v 2>/dev/null) == *"Version:  $CONTAINERD2_VERSION"* ]]
}

# compile_containerd2 DIR: go install the three binaries into DIR. -tags no_btrfs: no btrfs
# headers needed (the snapshotter is not used). The version is stamped the way containerd's
# release builds do (-X .../version.Version), so that CRI Version answers "v2.4.2" as a released
# containerd does, not the source default "2.4.2+unknown".
compile_containerd2() (
	cd / && GOWORK=off GOBIN=$1 "$GO" install -tags no_btrfs \
		-ldflags "-X $C2_MODULE/version.Version=$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/containerd@$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/containerd-shim-runc-v2@$CONTAINERD2_VERSION" \
		"$C2_MODULE/cmd/ctr@$CONTAINERD2_VERSION"
)
build_containerd2() {
	find_go "PODSTEP_CONTAINERD=2 (building containerd $CONTAINERD2_VERSION)"
	build_bin "$C2_CACHE" "containerd $CONTAINERD2_VERSION (containerd, containerd-shim-runc-v2, ctr)" \
		"about 3 min the first time" compile_containerd2
}

# ensure_containerd2: the binaries, from the cache or built (hack/lib/cache.sh: under a lock, so
# that two harnesses starting at once build once).
ensure_containerd2() {
	[ "$RUNTIME" = 2 ] || return 0
	cached "$C2_CACHE" containerd2_works build_containerd2 "containerd $CONTAINERD2_VERSION"
}

# ensure_runc: the containerd 2 harness runs its pods with runc built from the Go module proxy
# (hack/runc-build.sh, cached): user namespaces need runc >= 1.2 (idmapped mounts), Debian's is
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

# --- health -------------------------------------------------------------------------------------
ctr_() { "$CTR_BIN" -a "$SOCK" "$@"; }

running_pid() {
	local pid
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# the pid must still be OUR containerd (pids get reused)
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -- "--config $CONFIG" >/dev/null || return 1
	echo "$pid"
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

# Waits until the CRI runtime is ready. Prefers podstep's own CRI Status check.
wait_ready() {
	local deadline=$((SECONDS + WAIT_SECONDS))
	until socket_answers; do
		if [ -n "${1:-}" ] && ! kill -0 "$1" 2>/dev/null; then
			tail -n 30 "$LOG" >&2 || true
			die "containerd exited during start-up (log: $LOG)"
		fi
		[ $SECONDS -lt $deadline ] || {
			tail -n 30 "$LOG" >&2 || true
			die "containerd socket $SOCK did not answer within ${WAIT_SECONDS}s (log: $LOG)"
		}
		sleep 0.2
	done
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

print_endpoint() {
	log "CNI_SUBNET=$CNI_SUBNET"
	log "CNI_BRIDGE=$CNI_BRIDGE"
	log "PODSTEP_HARNESS_DIR=$DIR"
	log "PODSTEP_REGISTRY=$REG_ADDR"
	log "PODSTEP_REGISTRY_USER=$REG_USER"
	log "PODSTEP_REGISTRY_PASSWORD=$REG_PASSWORD"
	log "PODSTEP_REGISTRY_IMAGE=$PRIVATE_IMAGE"
	log "PODSTEP_RUNTIME=containerd $RUNNING_VERSION"
	log "PODSTEP_OCI_RUNTIME=$OCI_RUNTIME"
	log "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT"
}

# --- tracing ----------------------------------------------------------------------------------------
# PODSTEP_OTLP_ENDPOINT=http://127.0.0.1:PORT (an OTLP/HTTP collector's base URL, e.g. the one
# hack/jaeger-up.sh prints): containerd exports its spans there (service name "containerd"). Unset:
# its two tracing plugins (io.containerd.tracing.processor.v1.otlp, io.containerd.internal.v1.tracing)
# stay disabled, as before.
# - containerd 2 (v2.4) configures them only through the standard OTEL_* environment (their config
#   fields endpoint/protocol/insecure and sampling_ratio/service_name were removed in v2.4:
#   RELEASES.md, pkg/tracing/plugin/otlp.go), so it is started with that environment (spans
#   batched every 200 ms instead of 5 s, so that a test finds them soon after a run).
# - containerd 1.6: ignored. Upstream 1.6 has the plugins (config fields endpoint/protocol/insecure,
#   and its gRPC server spans), but Debian's 1.6.20~ds1 build leaves them out: its binary has no
#   io.containerd.tracing.processor plugin (`ctr plugins ls`), so it exports nothing.
OTLP_ENDPOINT=${PODSTEP_OTLP_ENDPOINT:-}
if [ -n "$OTLP_ENDPOINT" ]; then
	[[ $OTLP_ENDPOINT =~ ^https?://[^/?#]+(/[^?#]*)?$ ]] ||
		die "PODSTEP_OTLP_ENDPOINT=$OTLP_ENDPOINT: expected an OTLP/HTTP base URL such as http://127.0.0.1:14318"
fi
tracing_on() { [ "$RUNTIME" = 2 ] && [ -n "$OTLP_ENDPOINT" ]; }
# tracing_disabled: the disabled_plugins lines of the tracing plugins, when tracing is off.
tracing_disabled() {
	tracing_on || printf '  "%s",\n' io.containerd.tracing.processor.v1.otlp io.containerd.internal.v1.tracing
	return 0
}
# tracing_env: the environment containerd 2 is started with (empty when tracing is off).
tracing_env() {
	tracing_on || return 0
	printf '%s\n' "OTEL_EXPORTER_OTLP_ENDPOINT=$OTLP_ENDPOINT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
		OTEL_SERVICE_NAME=containerd OTEL_TRACES_SAMPLER=parentbased_always_on OTEL_BSP_SCHEDULE_DELAY=200
}
# check_tracing PID: a running containerd 2 was started with the tracing asked for now; a harness
# reused with other tracing would silently export elsewhere, or not at all.
check_tracing() {
	[ "$RUNTIME" = 2 ] || return 0
	local have asked=
	tracing_on && asked=$OTLP_ENDPOINT
	have=$(tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^OTEL_EXPORTER_OTLP_ENDPOINT=//p')
	[ "$have" = "$asked" ] ||
		die "containerd (pid $1) exports traces to '${have:-nowhere}', but PODSTEP_OTLP_ENDPOINT asks for '${asked:-nowhere}'; stop it with hack/containerd-down.sh and the same variables"
	if [ -n "$asked" ]; then log "containerd exports its traces to $asked (OTLP/HTTP)"; fi
	return 0
}
if [ "$RUNTIME" = 1.6 ] && [ -n "$OTLP_ENDPOINT" ]; then
	log "PODSTEP_OTLP_ENDPOINT=$OTLP_ENDPOINT: ignored for containerd 1.6 (Debian's build has no tracing plugin; see hack/README.md)"
fi

# --- config -----------------------------------------------------------------------------------
write_config() {
	mkdir -p "$DIR"/{root,state,run,cni,cni-data,opt,runc,images}
	if [ "$RUNTIME" = 2 ]; then
		containerd2_config >"$CONFIG.tmp"
	else
		containerd16_config >"$CONFIG.tmp"
	fi
	mv "$CONFIG.tmp" "$CONFIG"
	cni_config
}

# common_config: the sockets, debug, metrics and opt settings both config versions share.
common_config() {
	cat <<EOF
[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$DIR/run/containerd.sock.ttrpc"

[debug]
  address = "$DIR/run/debug.sock"
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"
EOF
}

# containerd 1.6: config version 2, the CRI plugin's settings all under io.containerd.grpc.v1.cri.
containerd16_config() {
	cat <<EOF
# podstep test harness: a private containerd 1.6. Generated by hack/containerd-up.sh; do not edit.
version = 2
root = "$DIR/root"
state = "$DIR/state"
plugin_dir = ""
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

$(common_config)

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  disable_apparmor = true
  # pod network namespaces under $DIR/state instead of the shared /var/run/netns
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni"
    max_conf_num = 1
EOF
}

# containerd 2.x: config version 3. The CRI plugin is split: runtime settings (oom, CNI, runc)
# under io.containerd.cri.v1.runtime, image settings (snapshotter, the sandbox image, now a
# "pinned image") under io.containerd.cri.v1.images. The same values as 1.6's config; besides:
# - imports = []: no /etc/containerd/conf.d/*.toml (2.x's default) slips into the harness;
# - NRI disabled: its socket, /var/run/nri/nri.sock, is one path for the whole host and two
#   harnesses would fight over it (1.6 has NRI off by default);
# - no aufs/btrfs snapshotter to disable (not in 2.x, and btrfs is left out of the build).
containerd2_config() {
	cat <<EOF
# podstep test harness: a private containerd $CONTAINERD2_VERSION. Generated by hack/containerd-up.sh; do not edit.
version = 3
root = "$DIR/root"
state = "$DIR/state"
imports = []
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.zfs",
$(tracing_disabled)
  "io.containerd.nri.v1.nri",
]

$(common_config)

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/runc"
        # runc >= 1.2 (idmapped mounts, for hostUsers: false), built by hack/runc-build.sh
        BinaryName = "$RUNC_BIN"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$DIR/cni"
    max_conf_num = 1
EOF
}

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

# --- images ----------------------------------------------------------------------------------------
# grep without -q: it reads all of ctr's output. 'grep -q' exits at the first match, ctr then dies
# of SIGPIPE writing the rest (--digests adds lines) and, with pipefail, the image counts as
# missing: "import of ... did not produce that image name" on some runs.
image_present() { ctr_ -n k8s.io images ls -q 2>/dev/null | grep -xF -- "$1" >/dev/null; }

build_rootfs() {
	local rootfs=$1 applet
	mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root,home/user,proc,sys,dev,var/www}
	chmod 1777 "$rootfs/tmp"
	cp /bin/busybox "$rootfs/bin/busybox"
	# every applet busybox knows, as a relative link in /bin ("busybox --install -s" would make
	# absolute links to the host's /usr/bin/busybox, absent in the rootfs).
	while read -r applet; do
		[ "$applet" = busybox ] && continue
		ln -sf busybox "$rootfs/bin/$applet"
	done < <(/bin/busybox --list)
	for applet in sh sleep echo cat ls id httpd wget env touch mkdir true false test nc date; do
		[ -e "$rootfs/bin/$applet" ] || die "busybox has no applet $applet"
	done
	cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/home/user:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
	cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
user:x:1000:
nogroup:x:65534:
EOF
	chown 1000:1000 "$rootfs/home/user"
	echo 'podstep harness' >"$rootfs/var/www/index.html"
}

# build_image LAYOUT TAG CMD...: an OCI layout with one tag, busybox rootfs, given cmd.
build_image() {
	local layout=$1 tag=$2 bundle
	shift 2
	bundle=$DIR/images/bundle-$(basename "$layout")
	rm -rf "$layout" "$bundle"
	umoci init --layout "$layout"
	umoci new --image "$layout:$tag"
	umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
	build_rootfs "$bundle/rootfs"
	umoci repack --image "$layout:$tag" "$bundle" >/dev/null
	local cfg=(--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.workingdir /)
	local arg
	for arg in "$@"; do cfg+=(--config.cmd "$arg"); done
	umoci config --image "$layout:$tag" --os linux --architecture "$(dpkg --print-architecture)" "${cfg[@]}"
	umoci gc --layout "$layout"
	rm -rf "$bundle"
}

# import_image NAME (repo:tag) LAYOUT
import_image() {
	local name=$1 layout=$2 tarball
	tarball=$layout.tar
	tar -C "$layout" -cf "$tarball" .
	# the layout's tag is the part after ':'; --base-name supplies the repository.
	ctr_ -n k8s.io images import --base-name "${name%:*}" --digests "$tarball" >/dev/null
	rm -f "$tarball"
	image_present "$name" || die "import of $name did not produce that image name"
}

ensure_images() {
	local built=0
	if ! image_present "$BUSYBOX_IMAGE"; then
		build_image "$DIR/images/busybox" "${BUSYBOX_IMAGE##*:}" sh
		import_image "$BUSYBOX_IMAGE" "$DIR/images/busybox"
		built=1
	fi
	if ! image_present "$PAUSE_IMAGE"; then
		build_image "$DIR/images/pause" "${PAUSE_IMAGE##*:}" /bin/sleep infinity
		import_image "$PAUSE_IMAGE" "$DIR/images/pause"
		built=1
	fi
	if [ $built = 1 ]; then
		log "images imported into namespace k8s.io: $BUSYBOX_IMAGE $PAUSE_IMAGE"
	fi
}

# --- registry --------------------------------------------------------------------------------------
# alive PID: the process exists and is not a zombie. (PID 1 on these machines does not reap
# orphans, so a killed background process can linger as a zombie, and 'kill -0' succeeds on it.)
alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# registry_pids: live docker-registry processes serving our config (pid file, or argv).
registry_pids() {
	local p
	{
		if [ -f "$REG_PIDFILE" ]; then cat "$REG_PIDFILE"; fi
		for p in /proc/[0-9]*; do
			if tr '\0' '\n' 2>/dev/null <"$p/cmdline" | grep -xF -- "$REG_CONFIG" >/dev/null; then
				echo "${p#/proc/}"
			fi
		done
	} | sort -u | while read -r p; do
		if [ -n "$p" ] && alive "$p" && tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -F -- "serve $REG_CONFIG" >/dev/null; then
			echo "$p"
		fi
	done
	return 0
}

# v2_status: the HTTP status of GET /v2/ without credentials (401 from a healthy registry
# with auth; 000 when nothing answers).
v2_status() { curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$REG_ADDR/v2/" 2>/dev/null || true; }

# listener_pid: the pid listening on 127.0.0.1:$REG_PORT, if ss can tell.
listener_pid() { ss -Hltnp "sport = :$REG_PORT" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1; }

# private_image_pushed: the registry serves the private image's manifest to our credentials.
private_image_pushed() {
	[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' -u "$REG_USER:$REG_PASSWORD" \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$REG_ADDR/v2/$PRIVATE_REPO/manifests/$PRIVATE_TAG" 2>/dev/null)" = 200 ]
}

registry_fail() {
	tail -n 20 "$REG_LOG" >&2 2>/dev/null || true
	die "registry: $* (log: $REG_LOG)"
}

start_registry() {
	local pid p code
	for p in $(registry_pids); do # one of ours that does not answer
		log "registry pid $p does not answer; restarting it"
		kill -9 "$p" 2>/dev/null || true
	done
	mkdir -p "$REG_DIR/data"
	# bcrypt (-B): the registry accepts no other htpasswd hash
	htpasswd -Bbn "$REG_USER" "$REG_PASSWORD" >"$REG_DIR/htpasswd.tmp"
	mv "$REG_DIR/htpasswd.tmp" "$REG_DIR/htpasswd"
	cat >"$REG_CONFIG.tmp" <<EOF
# podstep test harness: a private registry. Generated by hack/containerd-up.sh; do not edit.
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REG_DIR/data
  delete:
    enabled: true
http:
  addr: $REG_ADDR
  secret: podstep-harness-upload-state
auth:
  htpasswd:
    realm: podstep-harness
    path: $REG_DIR/htpasswd
EOF
	mv "$REG_CONFIG.tmp" "$REG_CONFIG"
	code=$(v2_status)
	[ "$code" = 000 ] || die "registry: something already answers on http://$REG_ADDR/v2/ (HTTP $code); free port $REG_PORT or set PODSTEP_REGISTRY_PORT"
	setsid docker-registry serve "$REG_CONFIG" >>"$REG_LOG" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$REG_PIDFILE"
	log "registry started (pid $pid, http://$REG_ADDR, config $REG_CONFIG, log $REG_LOG)"
	local deadline=$((SECONDS + WAIT_SECONDS))
	while :; do
		alive "$pid" || registry_fail "docker-registry exited during start-up"
		code=$(v2_status)
		[ "$code" = 401 ] && break
		[ "$code" = 000 ] || registry_fail "GET http://$REG_ADDR/v2/ answered HTTP $code, want 401 (auth required)"
		[ $SECONDS -lt $deadline ] || registry_fail "GET http://$REG_ADDR/v2/ did not answer 401 within ${WAIT_SECONDS}s"
		sleep 0.1
	done
	p=$(listener_pid)
	[ -z "$p" ] || [ "$p" = "$pid" ] || registry_fail "port $REG_PORT is served by pid $p, not by our registry (pid $pid)"
}

# push_private_image: the busybox layout, with one label added so that its config (the CRI image
# ID) differs from docker.io/library/busybox:1.35. (containerd's CRI RemoveImage removes every
# name of an image ID: removing the private image must not remove busybox.)
push_private_image() {
	local layout=$DIR/images/private-busybox out
	if [ ! -f "$DIR/images/busybox/index.json" ]; then
		build_image "$DIR/images/busybox" "${BUSYBOX_IMAGE##*:}" sh
	fi
	rm -rf "$layout"
	cp -a "$DIR/images/busybox" "$layout"
	umoci config --image "$layout:${BUSYBOX_IMAGE##*:}" --tag "$PRIVATE_TAG" \
		--config.label podstep.dev/image=private-busybox
	out=$(mktemp)
	if ! skopeo copy --quiet --dest-tls-verify=false --dest-creds "$REG_USER:$REG_PASSWORD" \
		"oci:$layout:$PRIVATE_TAG" "docker://$PRIVATE_IMAGE" >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		registry_fail "skopeo copy to docker://$PRIVATE_IMAGE failed"
	fi
	rm -f "$out"
	rm -rf "$layout"
	private_image_pushed || registry_fail "pushed $PRIVATE_IMAGE, but GET /v2/$PRIVATE_REPO/manifests/$PRIVATE_TAG with the credentials is not 200"
	log "registry: pushed $PRIVATE_IMAGE (user $REG_USER)"
}

# ensure_registry: the registry runs, asks for auth, and holds the private image.
ensure_registry() {
	local pid
	pid=$(registry_pids | head -n 1)
	if [ -n "$pid" ] && [ "$(v2_status)" = 401 ]; then
		log "registry already running (pid $pid, http://$REG_ADDR)"
	else
		start_registry
	fi
	private_image_pushed || push_private_image
}

# --- main ------------------------------------------------------------------------------------------
main() {
	ensure_packages
	ensure_containerd2
	ensure_runc
	if pid=$(running_pid) && socket_answers; then
		log "containerd already running (pid $pid, dir $DIR)"
		check_version
		check_tracing "$pid"
		host_sysctls
		ensure_images
		ensure_registry
		wait_ready
		print_endpoint
		return 0
	fi
	if pid=$(running_pid); then
		log "containerd pid $pid does not answer; restarting it"
		kill "$pid" 2>/dev/null || true
		sleep 1
		kill -9 "$pid" 2>/dev/null || true
	fi

	write_config
	host_sysctls
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
	# images first need the socket; the CRI check needs the pause image only for pods.
	local deadline=$((SECONDS + WAIT_SECONDS))
	until socket_answers; do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 30 "$LOG" >&2 || true
			die "containerd exited during start-up (log: $LOG)"
		}
		[ $SECONDS -lt $deadline ] || die "containerd socket $SOCK did not answer within ${WAIT_SECONDS}s (log: $LOG)"
		sleep 0.2
	done
	check_version
	check_tracing "$pid"
	ensure_images
	ensure_registry
	wait_ready "$pid"
	print_endpoint
}

main "$@"
