//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

const mockDriver = "io.kubernetes.storage.mock"

// csiMockManifest has an inline CSI volume and a claim bound to a CSI PV
// whose volumeHandle is VOLUME_ID, a volume the mock made; its CSIDriver
// needs no attach and wants pod info (the mock tells an ephemeral volume
// by csi.storage.k8s.io/ephemeral).
const csiMockManifest = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: io.kubernetes.storage.mock}
spec: {attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: [Persistent, Ephemeral]}
---
apiVersion: v1
kind: Secret
metadata: {name: mock-creds}
stringData: {key: Mock-Secret-Q8v3z}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-mock}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: default, name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
  csi:
    driver: io.kubernetes.storage.mock
    volumeHandle: "VOLUME_ID"
    nodePublishSecretRef: {name: mock-creds, namespace: default}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv-mock}
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata: {name: csi-mock}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: [sh, -c, sleep 3600]
    volumeMounts: [{name: inline, mountPath: /inline}, {name: data, mountPath: /data}]
  volumes:
  - {name: inline, csi: {driver: io.kubernetes.storage.mock, volumeAttributes: {color: blue}}}
  - {name: data, persistentVolumeClaim: {claimName: data}}
`

// startCSIMock runs the e2e mock CSI driver (hack/csi-mock-build.sh) on a
// socket in a temp dir, registered in DIR/registry, with one volume made
// through its CreateVolume; it returns the node socket, the registration
// dir and that volume's ID.
func startCSIMock(t *testing.T, extra ...string) (endpoint, registry, volumeID string) {
	t.Helper()
	bin := testenv.Require(t, "INTEGRATION", "hack/test.sh builds the mock CSI driver with hack/csi-mock-build.sh and sets it", "PODSTEP_CSIMOCK")[0]
	dir, err := os.MkdirTemp("", "csimock") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock, registry := filepath.Join(dir, "csi.sock"), filepath.Join(dir, "registry")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--endpoint", sock, "--registration", registry, "--create-volume", "data"}, extra...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("csimock exited before it was ready")
			}
			if f := strings.Fields(l); len(f) == 3 && f[0] == "volume" && f[1] == "data" {
				volumeID = f[2]
			}
			if strings.HasPrefix(l, "ready ") {
				if volumeID == "" {
					t.Fatal("csimock made no volume")
				}
				go func() { // drain
					for range lines {
					}
				}()
				return "unix://" + sock, registry, volumeID
			}
		case <-timeout:
			t.Fatal("csimock not ready within 30s")
		}
	}
}

// TestCSIMockDriver runs a pod with an inline CSI volume and a CSI PV on
// the simulator against the Kubernetes e2e mock CSI driver, found once
// with --csi-endpoint and once through its registration socket (as the
// kubelet finds it): the volumes step makes the kubelet's CSI calls in
// v1.37's order, each answered by the driver, teardown unpublishes both
// and unstages the PV, the secret shows nowhere, and nothing is left
// mounted or on disk.
func TestCSIMockDriver(t *testing.T) {
	e := setup(t)
	endpoint, registry, id := startCSIMock(t)
	file := filepath.Join(t.TempDir(), "csi-mock.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(csiMockManifest, "VOLUME_ID", id, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ngc := "NodeGetCapabilities"
	wantVolumes := []string{
		ngc, ngc, "NodePublishVolume", // inline: csiMountMgr.SetUpAt
		ngc, ngc, ngc, "NodeStageVolume", // PV: csiAttacher.MountDevice
		ngc, ngc, ngc, "NodePublishVolume", // PV: csiMountMgr.SetUpAt
	}
	wantTeardown := []string{"NodeUnpublishVolume", "NodeUnpublishVolume", ngc, "NodeUnstageVolume"}
	for name, how := range map[string][]string{
		"--csi-endpoint":   {"--csi-endpoint", mockDriver + "=" + endpoint, "--csi-registry", filepath.Join(t.TempDir(), "none")},
		"plugins_registry": {"--csi-registry", registry},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDirs(t)
			args := append([]string{"run", "--sim", "--auto", "-o", "json", "--grace-period", "0", "--settle", "0",
				"-f", file, "--root-dir", d.root, "--log-dir", d.logs}, how...)
			r := e.podstep(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r)
			}
			var volumes, teardown []string
			for _, s := range r.steps {
				var ms []string
				for _, c := range s.Calls {
					ms = append(ms, c.Method)
				}
				switch {
				case s.Name == "volumes":
					volumes = ms
				case slices.Contains(ms, "NodeUnpublishVolume"):
					teardown = ms
				}
			}
			if !slices.Equal(volumes, wantVolumes) {
				t.Errorf("volumes step calls:\n got %v\nwant %v", volumes, wantVolumes)
			}
			if !slices.Equal(teardown, wantTeardown) {
				t.Errorf("teardown calls:\n got %v\nwant %v", teardown, wantTeardown)
			}
			if strings.Contains(r.stdout+r.stderr, "Mock-Secret-Q8v3z") {
				t.Error("the publish secret shows in the output")
			}
			assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
			for _, m := range testenv.MountsUnder(filepath.Dir(d.root)) {
				t.Errorf("left mounted: %s", m)
			}
		})
	}
}

// csiAttachManifest: a CSI PV of a driver that needs attach, with the
// VolumeAttachment the attach/detach controller would have made (its name
// as the kubelet computes it, for node csi-node), ATTACHMENT_METADATA its
// status.attachmentMetadata.
const csiAttachManifest = `apiVersion: v1
kind: Node
metadata: {name: csi-node}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: io.kubernetes.storage.mock}
spec: {attachRequired: true}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: ATTACHMENT_NAME}
spec: {attacher: io.kubernetes.storage.mock, nodeName: csi-node, source: {persistentVolumeName: pv-mock}}
status: {attached: true, attachmentMetadata: ATTACHMENT_METADATA}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-mock}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: default, name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
  csi: {driver: io.kubernetes.storage.mock, volumeHandle: "VOLUME_ID"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv-mock}
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata: {name: csi-attach}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: [sh, -c, sleep 3600]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
`

// TestCSIMockDriverAttach: against the mock with attach required, the
// VolumeAttachment's attachmentMetadata is the publish context the mock
// needs ("device"); without it, the mock's own NodeStageVolume error is
// the step's, and nothing is left either way.
func TestCSIMockDriverAttach(t *testing.T) {
	e := setup(t)
	endpoint, _, id := startCSIMock(t, "--attach")
	name := fmt.Sprintf("csi-%x", sha256.Sum256([]byte(id+mockDriver+"csi-node")))
	for _, tc := range []struct{ name, metadata, want string }{
		{"attached", "{device: /dev/mock0}", ""},
		{"no device", "{}", "stage volume info 'device' key required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.NewReplacer("VOLUME_ID", id, "ATTACHMENT_NAME", name, "ATTACHMENT_METADATA", tc.metadata).Replace(csiAttachManifest)
			file := filepath.Join(t.TempDir(), "csi-attach.yaml")
			if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
				t.Fatal(err)
			}
			d := newDirs(t)
			r := e.podstep(t, "run", "--sim", "--auto", "-o", "json", "--grace-period", "0", "--settle", "0",
				"--csi-endpoint", mockDriver+"="+endpoint, "-f", file, "--root-dir", d.root, "--log-dir", d.logs)
			if tc.want == "" && r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r)
			}
			if tc.want != "" && (r.code != 1 || !strings.Contains(r.stdout, tc.want)) {
				t.Fatalf("exit %d, want 1 and %q\n%s", r.code, tc.want, r)
			}
			assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
		})
	}
}
