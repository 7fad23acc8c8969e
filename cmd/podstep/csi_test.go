package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
)

// csiManifest: an inline CSI volume and a claim bound to a CSI PV, of a
// driver that stages, needs no attach and wants pod info, with Secrets
// for stage and publish.
const csiManifest = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: test.csi.podstep.dev}
spec: {attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: [Persistent, Ephemeral]}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {stage: Stage-Secret-9f3kQ, publish: Publish-Secret-2m7xW, pin: "Qz7#k"}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: default, name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
  csi:
    driver: test.csi.podstep.dev
    volumeHandle: handle-1
    nodeStageSecretRef: {name: creds, namespace: default}
    nodePublishSecretRef: {name: creds, namespace: default}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv-data}
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata: {name: csi-app}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: [sh, -c, sleep 3600]
    volumeMounts: [{name: inline, mountPath: /inline}, {name: data, mountPath: /data}]
  volumes:
  - name: inline
    csi: {driver: test.csi.podstep.dev, nodePublishSecretRef: {name: creds}}
  - {name: data, persistentVolumeClaim: {claimName: data}}
`

// TestCSIRun runs csiManifest on the simulator against a recording CSI
// node server, through text, JSON, a recording and its replay: the
// volumes step's calls are the kubelet's CSI calls in its order, the
// teardown's unpublish and unstage, no output shows a secret (the driver
// got them; a short one, which free-text masking leaves alone, is masked
// as a csi_secret field), and nothing is left under the root dir.
func TestCSIRun(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}})
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, []byte(csiManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ep := "test.csi.podstep.dev=" + node.Endpoint
	outputs := map[string]string{}
	rec := filepath.Join(t.TempDir(), "run.jsonl")
	var root string
	for _, name := range []string{"json", "text"} {
		r, logs := dirs(t)
		root = r
		args := []string{"run", "--auto", "--sim", "--no-color", "--grace-period", "0", "--settle", "0", "--csi-endpoint", ep, "-f", file, "--root-dir", root, "--log-dir", logs}
		if name == "json" {
			args = append(args, "-o", "json", "--record", rec)
		}
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", name, code, stderr, stdout)
		}
		outputs[name], outputs[name+" (stderr)"] = stdout, stderr
		if entries, _ := os.ReadDir(filepath.Join(root, "pods")); len(entries) > 0 {
			t.Errorf("%s: %d pod dirs left under %s", name, len(entries), root)
		}
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	outputs["recording"] = string(b)
	code, stdout, stderr := run(t, "replay", "--auto", "--no-color", rec)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	outputs["replay"] = stdout

	assertNoSecrets(t, outputs, secretForms("Stage-Secret-9f3kQ", "Publish-Secret-2m7xW", "Qz7#k"))
	for _, g := range node.Got() {
		if p, ok := g.Request.(*csipb.NodePublishVolumeRequest); ok && p.Secrets["publish"] != "Publish-Secret-2m7xW" {
			t.Errorf("the driver did not get the publish secret: %v", p.Secrets)
		}
	}

	// The JSON steps: the volumes step's calls, then the last teardown's.
	ngc := csi.NodeGetCapabilities
	want := map[string][]string{
		"volumes": {ngc, ngc, csi.NodePublishVolume, ngc, ngc, ngc, csi.NodeStageVolume, ngc, ngc, ngc, csi.NodePublishVolume},
		"remove":  {csi.NodeUnpublishVolume, csi.NodeUnpublishVolume, ngc, csi.NodeUnstageVolume},
	}
	got := map[string][]string{}
	for _, line := range strings.Split(outputs["json"], "\n") {
		var s struct {
			Name  string `json:"name"`
			Calls []struct {
				Method  string          `json:"method"`
				Request json.RawMessage `json:"request"`
			} `json:"calls"`
		}
		if json.Unmarshal([]byte(line), &s) != nil || len(s.Calls) == 0 {
			continue
		}
		var ms []string
		for _, c := range s.Calls {
			ms = append(ms, c.Method)
			if c.Method == csi.NodePublishVolume && !strings.Contains(string(c.Request), `"secrets":{"pin":"\u003credacted\u003e","publish":"\u003credacted\u003e","stage":"\u003credacted\u003e"}`) {
				t.Errorf("NodePublishVolume request in JSON: %s", c.Request)
			}
		}
		switch {
		case s.Name == "volumes":
			got["volumes"] = ms
		case slices.Contains(ms, csi.NodeUnpublishVolume):
			got["remove"] = ms
		}
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s calls in JSON:\n got %v\nwant %v", k, got[k], w)
		}
	}
	if !strings.Contains(outputs["replay"], "NodeStageVolume") {
		t.Errorf("replay does not show the CSI calls:\n%s", outputs["replay"])
	}
}

// TestCSIEndpointFlag: a bad --csi-endpoint is exit 2 with the flag's
// error, before anything is read or sent.
func TestCSIEndpointFlag(t *testing.T) {
	for _, bad := range []string{"nodriver", "d=/run/csi.sock", "d=unix://relative.sock", "Bad_Name=unix:///x.sock"} {
		code, _, stderr := run(t, "plan", "--csi-endpoint", bad, "-f", "../../testdata/pods/hello.yaml")
		if code != 2 || !strings.Contains(stderr, "--csi-endpoint") {
			t.Errorf("--csi-endpoint %s: exit %d, %q", bad, code, stderr)
		}
	}
}
