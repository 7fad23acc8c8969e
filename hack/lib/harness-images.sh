# shellcheck shell=bash
# hack/lib/harness-images.sh: the two images (busybox, pause) built with umoci from Debian's static busybox
# and imported into the k8s.io namespace.
# Sourced by hack/containerd-up.sh (its variables and log/die; see its header).

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
