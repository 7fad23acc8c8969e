package steps

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
	"github.com/podstep/podstep/internal/reason"
)

// csiPod has an inline CSI volume and a claim bound to a CSI PV of the
// driver test.csi.podstep.dev, whose CSIDriver is CSIDRIVER, and the
// Secrets their refs name.
const csiPod = `
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: test.csi.podstep.dev}
spec: CSIDRIVER
---
apiVersion: v1
kind: Secret
metadata: {name: stage-creds}
stringData: {key: Stage-Secret-9f3k}
---
apiVersion: v1
kind: Secret
metadata: {name: publish-creds}
stringData: {key: Publish-Secret-2m7x}
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
    fsType: ext4
    volumeAttributes: {size: small}
    nodeStageSecretRef: {name: stage-creds, namespace: default}
    nodePublishSecretRef: {name: publish-creds, namespace: default}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, uid: 3d7f5d1e-1111-4a5b-9c2d-000000000001}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: pv-data
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata: {name: csi-app, uid: 6c0b7d7e-2222-4b5b-9c2d-000000000002}
spec:
  serviceAccountName: app-sa
  automountServiceAccountToken: false
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: [sh, -c, sleep 3600]
    volumeMounts:
    - {name: inline, mountPath: /inline}
    - {name: data, mountPath: /data}
  volumes:
  - name: inline
    csi:
      driver: test.csi.podstep.dev
      volumeAttributes: {color: blue}
      nodePublishSecretRef: {name: publish-creds}
  - name: data
    persistentVolumeClaim: {claimName: data}
`

const ephemeralDriver = "{attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: [Persistent, Ephemeral]}"

func csiBundleYAML(driverSpec string) string {
	return strings.Replace(csiPod, "CSIDRIVER", driverSpec, 1)
}

func csiOptions(t *testing.T, node *csitest.Node) Options {
	o := testOptions(t)
	o.CSI = &csi.Drivers{Endpoints: csi.Endpoints{"test.csi.podstep.dev": node.Endpoint}}
	return o
}

// TestCSIVolumes runs csiPod on the simulator against a recording CSI node
// server: the volumes step's calls are the kubelet's, in its order (the
// PV's MountDevice and SetUp, then the inline volume's SetUp, in spec
// order of the pod's volumes: inline first), the pod-info keys go only to
// a podInfoOnMount driver, nothing shows a secret, and teardown
// unpublishes both and unstages the PV, leaving no directory.
func TestCSIVolumes(t *testing.T) {
	ngc := csi.NodeGetCapabilities
	for _, tc := range []struct {
		name, spec string
		podInfo    bool
	}{
		{"podInfoOnMount", ephemeralDriver, true},
		{"no podInfoOnMount", "{attachRequired: false, podInfoOnMount: false, volumeLifecycleModes: [Persistent, Ephemeral]}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := csitest.Serve(t, &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}})
			o := csiOptions(t, node)
			b := parse(t, csiBundleYAML(tc.spec))
			e := runAll(t, b, newSim(t), o)
			if f, failed := e.Failed(); failed {
				t.Fatalf("step %s failed: %s: %v", f.Name, f.Result.Summary, f.Result.Err)
			}
			vol := stepNamed(t, e, "volumes")
			var methods []string
			for _, c := range vol.Calls {
				methods = append(methods, c.Method)
			}
			want := []string{
				ngc, ngc, csi.NodePublishVolume, // inline: SetUpAt
				ngc, ngc, ngc, csi.NodeStageVolume, ngc, ngc, ngc, csi.NodePublishVolume, // PV: MountDevice, SetUpAt
			}
			if !slices.Equal(methods, want) || !slices.Equal(node.Methods(), want) {
				t.Errorf("volumes step calls:\n got %v\nsent %v\nwant %v", methods, node.Methods(), want)
			}
			podDir := filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))
			var inline, pv *csipb.NodePublishVolumeRequest
			for _, g := range node.Got() {
				if r, ok := g.Request.(*csipb.NodePublishVolumeRequest); ok {
					if r.VolumeId == "handle-1" {
						pv = r
					} else {
						inline = r
					}
				}
			}
			if inline == nil || pv == nil {
				t.Fatalf("publish requests: %v %v", inline, pv)
			}
			// The stage is the volume's: the PV's volumeAttributes alone, no
			// pod info (csiAttacher.MountDevice sends csiSource.VolumeAttributes).
			for _, g := range node.Got() {
				if r, ok := g.Request.(*csipb.NodeStageVolumeRequest); ok && !maps.Equal(r.VolumeContext, map[string]string{"size": "small"}) {
					t.Errorf("NodeStageVolume volume context %v: want the PV's volumeAttributes only, {size: small}", r.VolumeContext)
				}
			}
			if inline.TargetPath != filepath.Join(podDir, "volumes", "kubernetes.io~csi", "inline", "mount") || inline.StagingTargetPath != "" ||
				inline.VolumeId != csi.InlineHandle(b.Pod.UID, "inline") {
				t.Errorf("inline publish: %v", inline)
			}
			if pv.TargetPath != filepath.Join(podDir, "volumes", "kubernetes.io~csi", "pv-data", "mount") ||
				pv.StagingTargetPath != csi.StagingPath(o.Config.RootDir, "test.csi.podstep.dev", "handle-1") {
				t.Errorf("PV publish: %v", pv)
			}
			for _, r := range []*csipb.NodePublishVolumeRequest{inline, pv} {
				_, has := r.VolumeContext[csi.PodNameKey]
				if has != tc.podInfo {
					t.Errorf("%s: pod info in volume context %v, want %v", r.VolumeId, r.VolumeContext, tc.podInfo)
				}
				if tc.podInfo && (r.VolumeContext[csi.PodUIDKey] != string(b.Pod.UID) || r.VolumeContext[csi.ServiceAccountKey] != "app-sa") {
					t.Errorf("pod info: %v", r.VolumeContext)
				}
				if r.Secrets["key"] != "Publish-Secret-2m7x" {
					t.Errorf("the driver did not get the publish secret: %v", r.Secrets)
				}
			}
			if tc.podInfo && (inline.VolumeContext[csi.EphemeralKey] != "true" || pv.VolumeContext[csi.EphemeralKey] != "false") {
				t.Errorf("ephemeral key: inline %v, pv %v", inline.VolumeContext, pv.VolumeContext)
			}
			// What the engine recorded holds no secret.
			for _, s := range e.Steps() {
				for _, c := range s.Calls {
					js, _ := protojson.Marshal(c.Request)
					if strings.Contains(string(js), "Secret-") {
						t.Errorf("%s recorded with a secret: %s", c.Method, js)
					}
				}
			}
			// Teardown: NodeUnpublishVolume of both (the last set up first),
			// NodeGetCapabilities and NodeUnstageVolume of the PV.
			n := len(node.Got())
			if err := e.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
			rm := stepNamed(t, e, "remove-dirs")
			if rm.State != Done {
				t.Fatalf("remove-dirs: %s %v", rm.State, rm.Result.Err)
			}
			wantTear := []string{csi.NodeUnpublishVolume, csi.NodeUnpublishVolume, ngc, csi.NodeUnstageVolume}
			if got := node.Methods()[n:]; !slices.Equal(got, wantTear) {
				t.Errorf("teardown calls %v, want %v", got, wantTear)
			}
			var rmMethods []string
			for _, c := range rm.Calls {
				rmMethods = append(rmMethods, c.Method)
			}
			if !slices.Equal(rmMethods, wantTear) {
				t.Errorf("remove-dirs step calls %v, want %v", rmMethods, wantTear)
			}
			for _, d := range []string{podDir, filepath.Join(o.Config.RootDir, "plugins", "kubernetes.io", "csi", "test.csi.podstep.dev")} {
				entries, _ := os.ReadDir(d)
				if len(entries) > 0 {
					t.Errorf("%s left with %d entries", d, len(entries))
				}
			}
		})
	}
}

// TestCSIStops: what makes a CSI volume stop the run shows in the plan's
// stops, before anything is sent: no driver endpoint, an inline volume
// without a CSIDriver listing Ephemeral, a PV whose driver needs attach.
func TestCSIStops(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{})
	for _, tc := range []struct {
		name, spec string
		noDriver   bool
		want       []string
	}{
		{"no endpoint", ephemeralDriver, true, []string{"driver name test.csi.podstep.dev not found in the list of registered CSI drivers", "--csi-endpoint test.csi.podstep.dev=unix://"}},
		{"persistent only", "{attachRequired: false}", false, []string{`volume mode "Ephemeral" not supported by driver test.csi.podstep.dev (only supports ["Persistent"])`}},
		{"attach required", "{volumeLifecycleModes: [Persistent, Ephemeral]}", false, []string{"MountVolume.WaitForAttach failed", "attachRequired: true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := csiOptions(t, node)
			if tc.noDriver {
				o.CSI = &csi.Drivers{}
			}
			e := New(parse(t, csiBundleYAML(tc.spec)), nil, o)
			stops := e.Stops()
			all := ""
			for _, s := range stops {
				if s.Reason != reason.FailedMountVolume || s.Name != "volumes" {
					t.Errorf("stop %+v", s)
				}
				all += s.Message + " | " + s.Hint + "\n"
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("stops do not say %q:\n%s", w, all)
				}
			}
			if len(node.Got()) != 0 {
				t.Errorf("the plan sent %v", node.Methods())
			}
		})
	}
}

// TestCSIHangingDriverTornDown: a driver that never answers
// NodePublishVolume fails the volumes step at the (short) timeout, naming
// the kubelet's csiTimeout, and teardown still unpublishes the volume
// (the call may have mounted it), leaving nothing.
func TestCSIHangingDriverTornDown(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Hang: csi.NodePublishVolume})
	o := csiOptions(t, node)
	o.CSI.Timeout = 200 * time.Millisecond
	b := parse(t, strings.Replace(csiBundleYAML(ephemeralDriver), "    - {name: data, mountPath: /data}\n", "", 1))
	e := runAll(t, b, newSim(t), o)
	f, failed := e.Failed()
	if !failed || f.Name != "volumes" {
		t.Fatalf("failed %v at %q", failed, f.Name)
	}
	if msg := f.Result.Err.Error(); !strings.Contains(msg, "csiTimeout") || !strings.Contains(msg, "NodePublishVolume") {
		t.Errorf("error %q does not name the kubelet's csiTimeout", msg)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := node.Methods(); got[len(got)-1] != csi.NodeUnpublishVolume {
		t.Errorf("teardown did not unpublish: %v", got)
	}
	podDir := filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
}

// TestCSIAttached: a PV whose driver needs attach goes on when the
// manifest has its VolumeAttachment (the name the kubelet computes:
// csi-sha256(handle+driver+node)) attached, and the attacher's
// attachmentMetadata is the publish context of NodeStageVolume and
// NodePublishVolume; not attached, it stops.
func TestCSIAttached(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}})
	o := csiOptions(t, node)
	spec := "{volumeLifecycleModes: [Persistent, Ephemeral], podInfoOnMount: true}"
	nodeName := New(parse(t, csiBundleYAML(spec)), nil, o).opts.Node.Name()
	va := func(attached bool) string {
		return fmt.Sprintf("---\napiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: %s}\nspec: {attacher: test.csi.podstep.dev, nodeName: %s, source: {persistentVolumeName: pv-data}}\nstatus: {attached: %t, attachmentMetadata: {device: /dev/mock0}}\n",
			csi.AttachmentName("handle-1", "test.csi.podstep.dev", nodeName), nodeName, attached)
	}
	if stops := New(parse(t, csiBundleYAML(spec)+va(false)), nil, o).Stops(); len(stops) != 1 || !strings.Contains(stops[0].Message, "status.attached false") {
		t.Errorf("not attached: stops %+v", stops)
	}
	e := runAll(t, parse(t, csiBundleYAML(spec)+va(true)), newSim(t), o)
	t.Cleanup(func() { _ = e.Teardown(context.Background()) })
	if f, failed := e.Failed(); failed {
		t.Fatalf("step %s failed: %v", f.Name, f.Result.Err)
	}
	stage := node.Last(csi.NodeStageVolume).(*csipb.NodeStageVolumeRequest)
	var pub *csipb.NodePublishVolumeRequest
	for _, g := range node.Got() {
		if r, ok := g.Request.(*csipb.NodePublishVolumeRequest); ok && r.VolumeId == "handle-1" {
			pub = r
		}
	}
	if stage.PublishContext["device"] != "/dev/mock0" || pub == nil || pub.PublishContext["device"] != "/dev/mock0" {
		t.Errorf("publish context: stage %v, publish %v", stage.PublishContext, pub)
	}
}

// TestCSITokenRequests: a CSIDriver with tokenRequests gets a token per
// audience in the volume context (or, with serviceAccountTokenInSecrets, in
// the publish secrets) under csi.storage.k8s.io/serviceAccount.tokens, as
// podServiceAccountTokenAttrs makes it; the recorded calls show no token.
func TestCSITokenRequests(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.Y3NpLXRva2Vu.c2lnLWNzaQ"
	for _, inSecrets := range []bool{false, true} {
		node := csitest.Serve(t, &csitest.Node{})
		o := csiOptions(t, node)
		o.Tokens = stubTokens{token: token}
		spec := fmt.Sprintf("{attachRequired: false, volumeLifecycleModes: [Persistent, Ephemeral], tokenRequests: [{audience: vault, expirationSeconds: 3600}], serviceAccountTokenInSecrets: %t}", inSecrets)
		b := parse(t, strings.Replace(csiBundleYAML(spec), "    - {name: data, mountPath: /data}\n", "", 1))
		e := runAll(t, b, newSim(t), o)
		t.Cleanup(func() { _ = e.Teardown(context.Background()) })
		if f, failed := e.Failed(); failed {
			t.Fatalf("step %s failed: %v", f.Name, f.Result.Err)
		}
		pub := node.Last(csi.NodePublishVolume).(*csipb.NodePublishVolumeRequest)
		where := pub.VolumeContext
		if inSecrets {
			where = pub.Secrets
		}
		if got := where["csi.storage.k8s.io/serviceAccount.tokens"]; !strings.Contains(got, `"vault":{"token":"`+token+`"`) {
			t.Errorf("serviceAccountTokenInSecrets %v: tokens %q (context %v)", inSecrets, got, pub.VolumeContext)
		}
		for _, s := range e.Steps() {
			for _, c := range s.Calls {
				if js, _ := protojson.Marshal(c.Request); strings.Contains(string(js), token) {
					t.Errorf("%s recorded with the token: %s", c.Method, js)
				}
			}
		}
	}
}

// TestCSIInterruptTornDown: Ctrl-C (the run's context cancelled) while
// the driver has not answered NodePublishVolume: teardown, on a context of
// its own, still unpublishes the volume (the call may have mounted it).
func TestCSIInterruptTornDown(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Hang: csi.NodePublishVolume})
	o := csiOptions(t, node)
	b := parse(t, strings.Replace(csiBundleYAML(ephemeralDriver), "    - {name: data, mountPath: /data}\n", "", 1))
	e := New(b, newSim(t), o)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !slices.Contains(node.Methods(), csi.NodePublishVolume) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_ = e.Continue(ctx)
	if f, failed := e.Failed(); !failed || f.Name != "volumes" {
		t.Fatalf("failed %v at %q", failed, f.Name)
	}
	if l := e.LeftBehind(); !strings.Contains(l.String(), "published: needs NodeUnpublishVolume") {
		t.Errorf("left behind before teardown: %s", l)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := node.Methods(); got[len(got)-1] != csi.NodeUnpublishVolume {
		t.Errorf("teardown after the interrupt did not unpublish: %v", got)
	}
	if l := e.LeftBehind(); !l.Empty() {
		t.Errorf("left behind after teardown: %s", l)
	}
	if _, err := os.Stat(filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
}

// TestCSINoStage: a driver without STAGE_UNSTAGE_VOLUME gets no
// NodeStageVolume and no staging path in NodePublishVolume; teardown sends
// only NodeUnpublishVolume and leaves no staging dir.
func TestCSINoStage(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{})
	o := csiOptions(t, node)
	b := parse(t, strings.Replace(csiBundleYAML(ephemeralDriver), "    - {name: inline, mountPath: /inline}\n", "", 1))
	e := runAll(t, b, newSim(t), o)
	if f, failed := e.Failed(); failed {
		t.Fatalf("step %s failed: %v", f.Name, f.Result.Err)
	}
	ngc := csi.NodeGetCapabilities
	if got, want := node.Methods(), []string{ngc, ngc, ngc, ngc, csi.NodePublishVolume}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if pub := node.Last(csi.NodePublishVolume).(*csipb.NodePublishVolumeRequest); pub.StagingTargetPath != "" {
		t.Errorf("staging path %q sent to a driver that does not stage", pub.StagingTargetPath)
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := node.Methods()[5:]; !slices.Equal(got, []string{csi.NodeUnpublishVolume}) {
		t.Errorf("teardown calls %v", got)
	}
	d := filepath.Join(o.Config.RootDir, "plugins", "kubernetes.io", "csi", "test.csi.podstep.dev")
	if entries, _ := os.ReadDir(d); len(entries) > 0 {
		t.Errorf("%s left with %v", d, entries)
	}
}
