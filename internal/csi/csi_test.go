package csi_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
)

const (
	capStage = csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	capGroup = csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
	capSNMW  = csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	ngc      = csi.NodeGetCapabilities
)

// recorder is a CRI client (on the simulator) that records the CSI calls.
func recorder(t testing.TB) *cri.Client {
	t.Helper()
	return simtest.Client(t, sim.Options{})
}

func volumeFor(root string, inline bool) *csi.Volume {
	v := &csi.Volume{Driver: "test.csi.podstep.dev", Handle: "vol-1", SpecName: "pv-1", AccessMode: corev1.ReadWriteOnce,
		FSType: "ext4", NodeName: "node-1", FSGroupPolicy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy,
		VolumeContext:  map[string]string{"k": "v"},
		StageSecrets:   map[string]string{"stage-key": "stage-secret-value"},
		PublishSecrets: map[string]string{"pub-key": "publish-secret-value"},
	}
	podDir := filepath.Join(root, "pods", "uid-1")
	if inline {
		v.Inline, v.SpecName, v.Handle = true, "inline", csi.InlineHandle("uid-1", "inline")
	} else {
		v.StagingPath = csi.StagingPath(root, v.Driver, v.Handle)
	}
	v.TargetPath = csi.TargetPath(podDir, v.SpecName)
	return v
}

// TestMountOrder checks the calls of a PV's MountDevice and SetUp and an
// inline volume's SetUp, as pkg/volume/csi makes them, with and without
// STAGE_UNSTAGE_VOLUME, and their teardown.
func TestMountOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inline      bool
		caps        []csipb.NodeServiceCapability_RPC_Type
		mount, tear []string
	}{
		{"pv staged", false, []csipb.NodeServiceCapability_RPC_Type{capStage},
			[]string{ngc, ngc, ngc, csi.NodeStageVolume, ngc, ngc, ngc, csi.NodePublishVolume},
			[]string{csi.NodeUnpublishVolume, ngc, csi.NodeUnstageVolume}},
		{"pv without stage", false, nil,
			[]string{ngc, ngc, ngc, ngc, csi.NodePublishVolume},
			[]string{csi.NodeUnpublishVolume}},
		{"inline", true, []csipb.NodeServiceCapability_RPC_Type{capStage},
			[]string{ngc, ngc, csi.NodePublishVolume},
			[]string{csi.NodeUnpublishVolume}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := csitest.Serve(t, &csitest.Node{Caps: tc.caps})
			rec := recorder(t)
			c, err := csi.Dial("test.csi.podstep.dev", node.Endpoint, rec, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			root := t.TempDir()
			v := volumeFor(root, tc.inline)
			var st csi.State
			ctx := context.Background()
			if !tc.inline {
				if err := csi.MountDevice(ctx, c, v, &st); err != nil {
					t.Fatal(err)
				}
			}
			if err := csi.SetUp(ctx, c, v, &st); err != nil {
				t.Fatal(err)
			}
			if got := node.Methods(); !slices.Equal(got, tc.mount) {
				t.Errorf("mount calls:\n got %v\nwant %v", got, tc.mount)
			}
			pub := node.Last(csi.NodePublishVolume).(*csipb.NodePublishVolumeRequest)
			if pub.TargetPath != v.TargetPath || !strings.HasSuffix(pub.TargetPath, "/volumes/kubernetes.io~csi/"+v.SpecName+"/mount") {
				t.Errorf("target path %q", pub.TargetPath)
			}
			wantStaging := ""
			if !tc.inline && slices.Contains(tc.caps, capStage) {
				wantStaging = filepath.Join(root, "plugins", "kubernetes.io", "csi", v.Driver, fmt.Sprintf("%x", sha256.Sum256([]byte("vol-1"))), "globalmount")
				stage := node.Last(csi.NodeStageVolume).(*csipb.NodeStageVolumeRequest)
				if stage.StagingTargetPath != wantStaging || stage.Secrets["stage-key"] != "stage-secret-value" {
					t.Errorf("stage: %v", stage)
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(wantStaging), csi.VolDataFile)); err != nil {
					t.Errorf("staging vol_data.json: %v", err)
				}
			}
			if pub.StagingTargetPath != wantStaging {
				t.Errorf("publish staging path %q, want %q", pub.StagingTargetPath, wantStaging)
			}
			if pub.Secrets["pub-key"] != "publish-secret-value" {
				t.Errorf("the driver did not get the publish secret: %v", pub.Secrets)
			}
			if m := pub.VolumeCapability.AccessMode.Mode; m != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
				t.Errorf("access mode %v", m)
			}
			data, err := os.ReadFile(filepath.Join(filepath.Dir(v.TargetPath), csi.VolDataFile))
			if err != nil || !strings.Contains(string(data), `"volumeHandle":"`+v.Handle+`"`) {
				t.Errorf("vol_data.json: %s %v", data, err)
			}
			// Every recorded call has the secrets masked.
			for _, call := range rec.Calls() {
				js, _ := protojson.Marshal(call.Request)
				if strings.Contains(string(js), "secret-value") {
					t.Errorf("%s recorded with a secret: %s", call.Method, js)
				}
			}
			n := len(node.Got())
			if st.Published {
				if err := csi.TearDown(ctx, c, v.Handle, v.TargetPath); err != nil {
					t.Fatal(err)
				}
			}
			if st.Staged {
				if err := csi.UnmountDevice(ctx, c, v.Handle, v.StagingPath); err != nil {
					t.Fatal(err)
				}
			}
			if got := node.Methods()[n:]; !slices.Equal(got, tc.tear) {
				t.Errorf("teardown calls:\n got %v\nwant %v", got, tc.tear)
			}
			if _, err := os.Stat(filepath.Dir(v.TargetPath)); !os.IsNotExist(err) {
				t.Errorf("volume dir left: %v", err)
			}
		})
	}
}

// TestAccessModeAndGroup: SINGLE_NODE_MULTI_WRITER maps ReadWriteOnce to
// SINGLE_NODE_MULTI_WRITER; VOLUME_MOUNT_GROUP sends the fsGroup.
func TestAccessModeAndGroup(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{capSNMW, capGroup}})
	c, err := csi.Dial("d", node.Endpoint, recorder(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := volumeFor(t.TempDir(), true)
	g := int64(2000)
	v.FSGroup = &g
	var st csi.State
	if err := csi.SetUp(context.Background(), c, v, &st); err != nil {
		t.Fatal(err)
	}
	pub := node.Last(csi.NodePublishVolume).(*csipb.NodePublishVolumeRequest)
	if m := pub.VolumeCapability.AccessMode.Mode; m != csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("access mode %v", m)
	}
	if grp := pub.VolumeCapability.GetMount().VolumeMountGroup; grp != "2000" {
		t.Errorf("volume_mount_group %q", grp)
	}
	if !st.MountGroup || st.KubeletFSGroup {
		t.Errorf("state %+v", st)
	}
}

// TestHangingDriver: a call the driver does not answer ends at the
// timeout, with an error that names the kubelet's csiTimeout, and counts
// as possibly done (teardown unpublishes it).
func TestHangingDriver(t *testing.T) {
	node := csitest.Serve(t, &csitest.Node{Hang: csi.NodePublishVolume})
	c, err := csi.Dial("slow.csi", node.Endpoint, recorder(t), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := volumeFor(t.TempDir(), true)
	var st csi.State
	err = csi.SetUp(context.Background(), c, v, &st)
	var te *csi.TimeoutError
	if !errors.As(err, &te) || te.Method != csi.NodePublishVolume {
		t.Fatalf("error %v, want a TimeoutError of NodePublishVolume", err)
	}
	for _, w := range []string{"csiTimeout", "2m0s", "slow.csi", "100ms"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if !st.Published {
		t.Error("a timed-out NodePublishVolume is not marked for teardown")
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, driver, ep, err string }{
		{"hostpath.csi.k8s.io=unix:///run/csi/csi.sock", "hostpath.csi.k8s.io", "unix:///run/csi/csi.sock", ""},
		{"d=unix:///a//b/../c.sock", "d", "unix:///a/c.sock", ""},
		{"nodriver", "", "", "expected DRIVER=unix://PATH"},
		{"=unix:///x", "", "", "empty driver name"},
		{"bad_name=unix:///x", "", "", "not a CSI driver name"},
		{strings.Repeat("a", 64) + "=unix:///x", "", "", "not a CSI driver name"},
		{"d=/run/csi.sock", "", "", "expected unix://PATH"},
		{"d=tcp://1.2.3.4:5", "", "", "expected unix://PATH"},
		{"d=unix://rel/csi.sock", "", "", "not absolute"},
	} {
		d, ep, err := csi.ParseEndpoint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || d != tc.driver || ep != tc.ep {
			t.Errorf("%q: %q %q %v", tc.in, d, ep, err)
		}
	}
	e := csi.Endpoints{}
	if err := e.Set("d=unix:///a"); err != nil {
		t.Fatal(err)
	}
	if err := e.Set("d=unix:///b"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("second endpoint for d: %v", err)
	}
}

// TestMaskSecrets: every csi_secret field is masked in a redacted copy,
// the original is untouched, and other fields are kept.
func TestMaskSecrets(t *testing.T) {
	req := &csipb.NodePublishVolumeRequest{VolumeId: "v", Secrets: map[string]string{"a": "s3cr3t"}, VolumeContext: map[string]string{"a": "kept"}}
	red := (&cri.Redactor{}).Redact(req).(*csipb.NodePublishVolumeRequest)
	if red.Secrets["a"] != cri.Mask || red.VolumeContext["a"] != "kept" || req.Secrets["a"] != "s3cr3t" {
		t.Errorf("redacted %v, original %v", red, req)
	}
	if cri.FullMethod(csi.NodePublishVolume) != "/csi.v1.Node/NodePublishVolume" || cri.ProtoPackage(csi.NodeStageVolume) != "csi.v1" {
		t.Errorf("service: %s %s", cri.FullMethod(csi.NodePublishVolume), cri.ProtoPackage(csi.NodeStageVolume))
	}
}

// TestDiscover: a driver registered in the registration dir is found by
// GetInfo on its socket; a dir others may write is not searched (a socket
// planted there would get the secrets).
func TestDiscover(t *testing.T) {
	dir, err := os.MkdirTemp("", "reg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	csitest.ServeRegistration(t, filepath.Join(dir, "d-reg.sock"), "d.csi.example.com", "/run/d/csi.sock")
	got, notes := csi.Discover(context.Background(), dir, time.Second)
	if r, ok := got["d.csi.example.com"]; !ok || r.Endpoint != "unix:///run/d/csi.sock" {
		t.Fatalf("discovered %v, notes %v", got, notes)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	got, notes = csi.Discover(context.Background(), dir, time.Second)
	if len(got) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "writable by group or others") {
		t.Errorf("group-writable dir: discovered %v, notes %v", got, notes)
	}
}
