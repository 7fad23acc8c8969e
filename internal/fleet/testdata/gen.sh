#!/usr/bin/env bash
# Regenerate the runner outputs the analysis tests read: real `podstep run --sim --auto -o json`
# output, one file per "node". Each node's manifest has its own UID (as the fleet gives each
# node's runner), and the sim's fault annotations stand in for what differs between real nodes:
#   node-e lacks the image (imagePullPolicy Never: ErrImageNeverPull), node-f's runtime is slow
#   to make sandboxes (400 ms per RunPodSandbox).
# Run from anywhere: bash internal/fleet/testdata/gen.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/podstep" ./cmd/podstep)

manifest() { # NODE EXTRA-ANNOTATIONS POLICY
	cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: hello
  namespace: default
  uid: 00000000-0000-4000-8000-$(printf '%s' "$1" | sha256sum | cut -c1-12)
$2
spec:
  containers:
  - name: hello
    image: docker.io/library/busybox:1.35
    imagePullPolicy: ${3:-IfNotPresent}
    command: ["sh", "-c", "echo hello from podstep; sleep 3600"]
YAML
}

run() { # NODE MANIFEST-ARGS...
	local node=$1
	shift
	manifest "$node" "$@" >"$tmp/$node.yaml"
	"$tmp/podstep" run --sim --auto -o json --settle 0 -f "$tmp/$node.yaml" \
		--root-dir "$tmp/root-$node" --log-dir "$tmp/log-$node" >"$here/$node.json" 2>"$tmp/$node.err" || true
}

for n in node-a node-b node-c node-d; do run "$n" ""; done
run node-e '  annotations:
    sim.podstep.dev/missing-image: docker.io/library/busybox:1.35' Never
run node-f '  annotations:
    sim.podstep.dev/delay.RunPodSandbox: 400ms'
ls -l "$here"/*.json
