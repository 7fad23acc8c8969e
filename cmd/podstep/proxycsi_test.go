package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/volume"
)

// The secrets the test kubelet sends a CSI driver: a NodeStageVolume
// secret, a NodePublishVolume secret and a service-account token in the
// volume context (a CSIDriver with tokenRequests).
const (
	csiStageSecret   = "Stage-Secret-Vb83k"
	csiPublishSecret = "Mock-Secret-Q8v3z"
	csiToken         = "eyJhbGciOiJSUzI1NiJ9.Token-Secret-Hh27w.sig"
	csiDriverName    = "io.kubernetes.storage.mock"
)

// csiDriver is a CSI driver serving a node socket in a private temp dir,
// registered (node-driver-registrar's GetInfo) in a registry dir.
type csiDriver struct {
	sock, registry, volumeID string
	node                     *csitest.Node // nil for csimock
}

// startCSIDriver starts the e2e mock CSI driver when $PODSTEP_CSIMOCK
// names it (hack/csi-mock-build.sh prints its path; test/integration's
// csiproxy_test.go always uses it), else csitest's node server.
func startCSIDriver(t *testing.T) csiDriver {
	t.Helper()
	dir, err := os.MkdirTemp("", "drv") // 0700, short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := csiDriver{sock: filepath.Join(dir, "csi.sock"), registry: filepath.Join(dir, "reg")}
	if err := os.Mkdir(d.registry, 0o700); err != nil {
		t.Fatal(err)
	}
	if bin := os.Getenv("PODSTEP_CSIMOCK"); bin != "" {
		d.volumeID = startCSIMockAt(t, bin, d.sock, d.registry)
		return d
	}
	d.node = &csitest.Node{Caps: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}
	csitest.Serve(t, d.node)
	// csitest serves in a dir of its own: the socket the kubelet dials is there.
	d.sock = strings.TrimPrefix(d.node.Endpoint, "unix://")
	d.volumeID = "vol-mock-1"
	csitest.ServeRegistration(t, filepath.Join(d.registry, csiDriverName+"-reg.sock"), csiDriverName, d.sock)
	return d
}

// startCSIMockAt runs csimock on sock, registered in registry, with one
// volume made by its CreateVolume; it returns the volume's ID.
func startCSIMockAt(t *testing.T, bin, sock, registry string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--endpoint", sock, "--registration", registry, "--create-volume", "data")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	id := ""
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "volume" && f[1] == "data" {
			id = f[2]
		}
		if len(f) > 0 && f[0] == "ready" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return id
		}
	}
	t.Fatal("csimock exited before it was ready")
	return ""
}

// inode is a path's inode (0 when missing).
func inode(path string) uint64 {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// kubeletCSI plays a kubelet v1.37 creating and deleting pod default/web
// (UID uid-csi-1) with a CSI PV (staged: its NodeGetCapabilities calls,
// NodeStageVolume with a secret; NodePublishVolume with a secret and a
// token, without pod info) and an inline volume (pod info in its volume
// context), through the CSI socket at sock and the CRI proxy at cri;
// between them the stats walk and a republish. It fails the test on a
// call the driver refused.
func kubeletCSI(t *testing.T, sock, cri, root, volumeID string) {
	t.Helper()
	ctx := context.Background()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	nc := csipb.NewNodeClient(conn)
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
	const uid = "uid-csi-1"
	mount := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	podDir := filepath.Join(root, "pods", uid)
	_, _ = nc.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{}) // registration: node-level

	// The PV: csiAttacher.MountDevice, then csiMountMgr.SetUpAt.
	staging := csi.StagingPath(root, csiDriverName, volumeID)
	must("staging dir", os.MkdirAll(staging, 0o750))
	caps(3)
	_, err = nc.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging, VolumeCapability: mount,
		Secrets: map[string]string{"stage-key": csiStageSecret}})
	must("NodeStageVolume", err)
	pvTarget := csi.TargetPath(podDir, "pv-data")
	must("pv dir", os.MkdirAll(filepath.Dir(pvTarget), 0o750))
	caps(3)
	tokens := `{"podstep.dev/test":{"token":"` + csiToken + `","expirationTimestamp":"2026-11-29T16:00:00Z"}}`
	_, err = nc.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging, TargetPath: pvTarget,
		VolumeCapability: mount, Secrets: map[string]string{"publish-key": csiPublishSecret},
		VolumeContext: map[string]string{volume.TokensKey: tokens}})
	must("NodePublishVolume pv-data", err)

	// The inline volume of a podInfoOnMount driver: the pod is named now.
	inTarget := csi.TargetPath(podDir, "inline")
	must("inline dir", os.MkdirAll(filepath.Dir(inTarget), 0o750))
	caps(2)
	inline := &csipb.NodePublishVolumeRequest{VolumeId: csi.InlineHandle(uid, "inline"), TargetPath: inTarget, VolumeCapability: mount,
		VolumeContext: map[string]string{"color": "blue", csi.PodNameKey: "web", csi.PodNamespaceKey: "default", csi.PodUIDKey: uid,
			csi.ServiceAccountKey: "default", csi.EphemeralKey: "true"}}
	_, err = nc.NodePublishVolume(ctx, inline)
	must("NodePublishVolume inline", err)

	// The pod's sandbox, through the CRI proxy.
	cc, err := grpc.NewClient("unix://"+cri, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	rt := runtimeapi.NewRuntimeServiceClient(cc)
	labels := map[string]string{"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: uid}, LogDirectory: filepath.Join(root, "logs"), Labels: labels}})
	must("RunPodSandbox", err)

	// The volume stats walk and the reconciler's republish: not steps.
	for range 2 {
		_, _ = nc.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: pvTarget})
	}
	_, err = nc.NodePublishVolume(ctx, inline)
	must("republish", err)

	// Teardown.
	_, err = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	must("StopPodSandbox", err)
	_, err = nc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: inline.VolumeId, TargetPath: inTarget})
	must("NodeUnpublishVolume inline", err)
	_, err = nc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: pvTarget})
	must("NodeUnpublishVolume pv-data", err)
	caps(1)
	_, err = nc.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging})
	must("NodeUnstageVolume", err)
	_, err = rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	must("RemovePodSandbox", err)
}

// csiStory is the pod's steps in -o json: name, stage and methods.
func csiStory(t *testing.T, out string) (story []string, polling map[string]int) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		var typ struct{ Type string }
		if json.Unmarshal([]byte(l), &typ) != nil {
			continue
		}
		var s struct {
			Name, Stage string
			Calls       []struct{ Method string }
		}
		switch typ.Type {
		case "step":
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Errorf("step line: %v", err)
			}
			var ms []string
			for _, c := range s.Calls {
				ms = append(ms, c.Method)
			}
			story = append(story, s.Stage+" "+s.Name+" "+strings.Join(ms, ","))
		case "polling":
			var p struct{ Calls map[string]int }
			_ = json.Unmarshal([]byte(l), &p)
			polling = p.Calls
		}
	}
	return story, polling
}

// TestProxyCSI: `podstep proxy --csi DRIVER` stands in front of a CSI
// driver's registered node socket while a test kubelet stages, publishes,
// walks the stats, republishes, unpublishes and unstages: every call
// reaches the driver and comes back; the calls are steps of the pod's
// story (the volumes stage, the teardown), attributed by target path and
// by volume handle, the stats and republish counted apart; no secret shows
// in stdout, stderr or the recording; and the driver's socket is back
// after exit: Ctrl-C, SIGTERM, and SIGKILL followed by podstep cleanup.
func TestProxyCSI(t *testing.T) {
	markers, err := os.MkdirTemp("", "mk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(markers) })
	t.Setenv(proxy.MarkerDirEnv, markers)
	want := []string{
		"volumes volumes NodeGetCapabilities,NodeGetCapabilities,NodeGetCapabilities,NodeStageVolume",
		"volumes volumes NodeGetCapabilities,NodeGetCapabilities,NodeGetCapabilities,NodePublishVolume",
		"volumes volumes NodeGetCapabilities,NodeGetCapabilities,NodePublishVolume",
		"sandbox run-sandbox RunPodSandbox",
		"teardown stop-sandbox StopPodSandbox",
		"teardown remove-dirs NodeUnpublishVolume",
		"teardown remove-dirs NodeUnpublishVolume",
		"teardown remove-dirs NodeGetCapabilities,NodeUnstageVolume",
		"teardown remove-sandbox RemovePodSandbox",
	}
	for _, how := range []string{"SIGINT", "SIGTERM", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			drv := startCSIDriver(t)
			orig := inode(drv.sock)
			d, upstream := simAndDir(t, "pxc")
			sock, recs := filepath.Join(d, "p.sock"), filepath.Join(d, "recs")
			if err := os.Mkdir(recs, 0o700); err != nil {
				t.Fatal(err)
			}
			// Read while the proxy writes them: locked.
			var out, errOut lockedBuffer
			px := exec.Command(bin, "proxy", "--auto", "-o", "json", "--listen", "unix://"+sock, "--upstream", upstream,
				"--csi", csiDriverName, "--csi-registry", drv.registry, "--record-dir", recs, "--serve", "127.0.0.1:0")
			px.Stdout, px.Stderr = &out, &errOut
			if err := px.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Process.Kill(); _ = px.Wait() })
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(sock); err == nil && inode(drv.sock) != orig {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the proxy did not take over %s within 10 s: %s", drv.sock, errOut.String())
				}
			}
			moved := proxy.MovedPath(drv.sock)
			if inode(moved) != orig {
				t.Fatalf("the driver's socket is not at %s", moved)
			}
			kubeletCSI(t, drv.sock, sock, filepath.Join(d, "kubelet"), drv.volumeID)
			page := livePage(t, errOut.String())
			if drv.node != nil {
				got := drv.node.Methods()
				wantDriver := []string{"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodeStageVolume",
					"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodePublishVolume",
					"NodeGetCapabilities", "NodeGetCapabilities", "NodePublishVolume", "NodePublishVolume",
					"NodeUnpublishVolume", "NodeUnpublishVolume", "NodeGetCapabilities", "NodeUnstageVolume"}
				if !slices.Equal(got, wantDriver) {
					t.Errorf("the driver got\n %v\nwant\n %v", got, wantDriver)
				}
				if s := drv.node.Last("NodePublishVolume"); s == nil {
					t.Error("no NodePublishVolume reached the driver")
				}
			}
			time.Sleep(300 * time.Millisecond)
			switch how {
			case "SIGINT":
				_ = px.Process.Signal(os.Interrupt)
			case "SIGTERM":
				_ = px.Process.Signal(syscall.SIGTERM)
			case "SIGKILL":
				_ = px.Process.Signal(syscall.SIGKILL)
			}
			_ = px.Wait()
			if how == "SIGKILL" {
				if inode(drv.sock) == orig {
					t.Fatal("the driver's socket is back after SIGKILL: the test proves nothing")
				}
				cl := exec.Command(bin, "--runtime-endpoint", upstream, "cleanup", "--root-dir", filepath.Join(d, "root"), "--log-dir", filepath.Join(d, "log"))
				b, err := cl.CombinedOutput()
				if err != nil {
					t.Fatalf("podstep cleanup: %v\n%s", err, b)
				}
				if !strings.Contains(string(b), "✓ CSI driver "+csiDriverName+": put its socket back at "+drv.sock) {
					t.Errorf("cleanup does not say it put the socket back:\n%s", b)
				}
			}
			if inode(drv.sock) != orig {
				t.Errorf("after %s the driver's socket is not back at %s\nstderr: %s", how, drv.sock, errOut.String())
			}
			if _, err := os.Lstat(moved); err == nil {
				t.Errorf("after %s %s is left", how, moved)
			}
			if m, _ := filepath.Glob(filepath.Join(markers, "*")); len(m) > 0 {
				t.Errorf("after %s markers are left: %v", how, m)
			}
			// The driver answers on its socket again.
			conn, err := grpc.NewClient("unix://"+drv.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			if _, err := csipb.NewNodeClient(conn).NodeGetCapabilities(context.Background(), &csipb.NodeGetCapabilitiesRequest{}); err != nil {
				t.Errorf("the driver does not answer on its socket after %s: %v", how, err)
			}
			if how == "SIGKILL" {
				return
			}
			defer func() {
				if t.Failed() {
					t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
				}
			}()
			story, polling := csiStory(t, out.String())
			if !slices.Equal(story, want) {
				t.Errorf("the pod's story:\n %s\nwant\n %s", strings.Join(story, "\n "), strings.Join(want, "\n "))
			}
			for k, n := range map[string]int{"NodeGetVolumeStats": 2, "NodeGetInfo": 1, "NodePublishVolume (republish)": 1} {
				if polling[k] != n {
					t.Errorf("polling %s = %d, want %d (%v)", k, polling[k], n, polling)
				}
			}
			rec, err := filepath.Glob(filepath.Join(recs, "default_web_uid-csi-1.rec.gz"))
			if err != nil || len(rec) != 1 {
				t.Fatalf("no recording in %s: %v", recs, err)
			}
			raw, err := os.ReadFile(rec[0])
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			recorded, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			rp := exec.Command(bin, "replay", "--auto", "-o", "json", rec[0])
			replayed, err := rp.Output()
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if rs, _ := csiStory(t, string(replayed)); !slices.Equal(rs, want) {
				t.Errorf("the replayed story:\n %s\nwant\n %s\n%s", strings.Join(rs, "\n "), strings.Join(want, "\n "), replayed)
			}
			if !strings.Contains(page, `"method":"NodeStageVolume"`) || !strings.Contains(page, `"method":"NodeUnstageVolume"`) {
				t.Errorf("the live page's events have no CSI calls:\n%.2000s", page)
			}
			outputs := map[string]string{"stdout": out.String(), "stderr": errOut.String(), "recording": string(recorded), "replay": string(replayed),
				"live page": page}
			assertNoSecrets(t, outputs, secretForms(csiStageSecret, csiPublishSecret, csiToken))
			if !strings.Contains(string(recorded), `"publish-key":"\u003credacted\u003e"`) || !strings.Contains(string(recorded), `\"token\":\"\u003credacted\u003e\"`) {
				t.Errorf("the recording does not show the secrets masked")
			}
		})
	}
}

// TestProxyCSIStartError: a proxy that took a driver's socket over and
// then fails to start (its --listen socket is in use) puts the socket
// back before it exits 2, and leaves no marker.
func TestProxyCSIStartError(t *testing.T) {
	markers, err := os.MkdirTemp("", "mk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(markers) })
	t.Setenv(proxy.MarkerDirEnv, markers)
	drv := startCSIDriver(t)
	orig := inode(drv.sock)
	d, upstream := simAndDir(t, "pxe")
	sock := filepath.Join(d, "p.sock")
	busy, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	go func() {
		for {
			c, err := busy.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	px := exec.Command(bin, "proxy", "--auto", "--listen", "unix://"+sock, "--upstream", upstream, "--csi", csiDriverName, "--csi-registry", drv.registry)
	b, err := px.CombinedOutput()
	if code := px.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(b), "something already answers on "+sock) {
		t.Errorf("exit %d (%v), want 2 and the listen error:\n%s", code, err, b)
	}
	if !strings.Contains(string(b), "proxy at "+drv.sock) {
		t.Errorf("the proxy did not take the driver's socket over first: the test proves nothing\n%s", b)
	}
	if inode(drv.sock) != orig {
		t.Errorf("the driver's socket is not back at %s", drv.sock)
	}
	if m, _ := filepath.Glob(filepath.Join(markers, "*")); len(m) > 0 {
		t.Errorf("markers left: %v", m)
	}
}

// livePage is what the live page (--serve, its address in stderr) sends a
// new reader of /events within a second: every line of the pod so far.
func livePage(t *testing.T, stderr string) string {
	t.Helper()
	const at = "live page at http://"
	i := strings.Index(stderr, at)
	if i < 0 {
		t.Fatalf("no live page address in stderr:\n%s", stderr)
	}
	addr, _, _ := strings.Cut(stderr[i+len(at):], "/")
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body) // ends with the client's timeout
	return string(b)
}

// lockedBuffer is a bytes.Buffer a test reads while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
