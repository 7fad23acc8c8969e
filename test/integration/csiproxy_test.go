//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/proxy"
)

// TestProxyCSIMock: `podstep proxy --csi` in front of the Kubernetes e2e
// mock CSI driver (csimock), found through its registration as the
// kubelet finds it. A test kubelet stages and publishes the driver's volume
// (secrets in both, pod info in the volume context), publishes an inline
// volume, walks the stats, unpublishes both and unstages: the driver
// answers each call through the proxy; the pod's story (-o json) has them
// as volumes and teardown steps; no secret shows in stdout, stderr or the
// recording; the driver's socket is back after SIGTERM, and after SIGKILL
// once podstep cleanup ran.
func TestProxyCSIMock(t *testing.T) {
	e := setup(t)
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			endpoint, registry, volumeID := startCSIMock(t)
			sock := strings.TrimPrefix(endpoint, "unix://")
			markers := t.TempDir()
			env := append(os.Environ(), proxy.MarkerDirEnv+"="+markers)
			orig := csiInode(sock)
			dir, err := os.MkdirTemp("", "pxcsi")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			recs := filepath.Join(dir, "recs")
			if err := os.Mkdir(recs, 0o700); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			px := exec.Command(e.bin, "proxy", "--auto", "-o", "json", "--listen", "unix://"+filepath.Join(dir, "cri.sock"), "--upstream", e.endpoint,
				"--csi", mockDriver, "--csi-registry", registry, "--record-dir", recs)
			px.Env, px.Stdout, px.Stderr = env, &out, &errOut
			if err := px.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Process.Kill(); _ = px.Wait() })
			// Taken over: the driver's socket linked aside, then the
			// proxy's renamed over its path (both, or the test's kubelet
			// may still reach the driver directly).
			for deadline := time.Now().Add(20 * time.Second); csiInode(proxy.MovedPath(sock)) != orig || csiInode(sock) == orig; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the proxy did not take %s over: %s", sock, errOut.String())
				}
			}
			root := filepath.Join(dir, "kubelet")
			csiMockKubelet(t, sock, root, volumeID)
			time.Sleep(300 * time.Millisecond)
			if how == "SIGTERM" {
				_ = px.Process.Signal(syscall.SIGTERM)
			} else {
				_ = px.Process.Signal(syscall.SIGKILL)
			}
			_ = px.Wait()
			if how == "SIGKILL" {
				cl := exec.Command(e.bin, "--runtime-endpoint", e.endpoint, "cleanup", "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"))
				cl.Env = env
				b, err := cl.CombinedOutput()
				if err != nil || !strings.Contains(string(b), "put its socket back at "+sock) {
					t.Errorf("podstep cleanup: %v\n%s", err, b)
				}
			}
			if csiInode(sock) != orig {
				t.Fatalf("after %s the driver's socket is not back at %s\n%s", how, sock, errOut.String())
			}
			if how == "SIGKILL" {
				return
			}
			var story []string
			for _, l := range strings.Split(out.String(), "\n") {
				var s struct {
					Type, Stage, Name string
					Calls             []struct{ Method, Code string }
				}
				if json.Unmarshal([]byte(l), &s) != nil || s.Type != "step" {
					continue
				}
				var ms []string
				for _, c := range s.Calls {
					ms = append(ms, c.Method+"/"+c.Code)
				}
				story = append(story, s.Stage+" "+strings.Join(ms, ","))
			}
			ok := "NodeGetCapabilities/OK,"
			want := []string{
				"volumes " + ok + ok + ok + "NodeStageVolume/OK",
				"volumes " + ok + ok + ok + "NodePublishVolume/OK",
				"volumes " + ok + ok + "NodePublishVolume/OK",
				"teardown NodeUnpublishVolume/OK",
				"teardown NodeUnpublishVolume/OK",
				"teardown " + ok + "NodeUnstageVolume/OK",
			}
			if !slices.Equal(story, want) {
				t.Errorf("the pod's story:\n %s\nwant\n %s\n%s", strings.Join(story, "\n "), strings.Join(want, "\n "), out.String())
			}
			all := out.String() + errOut.String()
			rec, _ := filepath.Glob(filepath.Join(recs, "*.rec.gz"))
			for _, r := range rec {
				b, err := exec.Command(e.bin, "replay", "--auto", "-o", "json", r).Output()
				if err != nil {
					t.Errorf("replay %s: %v", r, err)
				}
				all += string(b)
			}
			if len(rec) != 1 {
				t.Errorf("recordings %v, want one", rec)
			}
			for _, s := range []string{"Mock-Secret-Q8v3z", "Stage-Secret-Vb83k"} {
				if strings.Contains(all, s) {
					t.Errorf("the secret %s shows", s)
				}
			}
		})
	}
}

func csiInode(p string) uint64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// csiMockKubelet plays a kubelet's CSI calls for pod default/csi-proxy
// (a podInfoOnMount driver: each publish names the pod): a PV staged and
// published, an inline volume, the stats walk, then the teardown.
func csiMockKubelet(t *testing.T, sock, root, volumeID string) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	nc := csipb.NewNodeClient(conn)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	caps := func(n int) {
		for range n {
			_, err := nc.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
			must("NodeGetCapabilities", err)
		}
	}
	const uid = "3d7f5d1e-2222-4a5b-9c2d-0000000000c5"
	info := func(inline bool) map[string]string {
		return map[string]string{csi.PodNameKey: "csi-proxy", csi.PodNamespaceKey: "default", csi.PodUIDKey: uid,
			csi.ServiceAccountKey: "default", csi.EphemeralKey: map[bool]string{true: "true", false: "false"}[inline]}
	}
	mount := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	podDir := filepath.Join(root, "pods", uid)
	staging := csi.StagingPath(root, mockDriver, volumeID)
	must("staging dir", os.MkdirAll(staging, 0o750))
	caps(3)
	_, err = nc.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging, VolumeCapability: mount,
		Secrets: map[string]string{"stage": "Stage-Secret-Vb83k"}})
	must("NodeStageVolume", err)
	pv := csi.TargetPath(podDir, "pv-mock")
	must("pv dir", os.MkdirAll(filepath.Dir(pv), 0o750))
	caps(3)
	_, err = nc.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging, TargetPath: pv,
		VolumeCapability: mount, Secrets: map[string]string{"publish": "Mock-Secret-Q8v3z"}, VolumeContext: info(false)})
	must("NodePublishVolume pv", err)
	inline := csi.TargetPath(podDir, "inline")
	must("inline dir", os.MkdirAll(filepath.Dir(inline), 0o750))
	caps(2)
	inlineID := csi.InlineHandle(uid, "inline")
	vc := info(true)
	vc["color"] = "blue"
	_, err = nc.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: inlineID, TargetPath: inline, VolumeCapability: mount, VolumeContext: vc})
	must("NodePublishVolume inline", err)
	_, _ = nc.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: pv})
	_, err = nc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: inlineID, TargetPath: inline})
	must("NodeUnpublishVolume inline", err)
	_, err = nc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: pv})
	must("NodeUnpublishVolume pv", err)
	caps(1)
	_, err = nc.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging})
	must("NodeUnstageVolume", err)
}
