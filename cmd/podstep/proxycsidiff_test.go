package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/csi/csitest"
	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/proxy"
)

// replayCalls sends a recording's calls again, in order, as a kubelet
// would: CRI calls to criEP, CSI calls to csiEP, the sandbox and
// container IDs of the recording replaced by those the runtime answers
// now. A CRI call that fails is logged (the simulated runtime may refuse
// what the recorded run's dirs no longer back); a CSI call that fails
// fails the test.
func replayCalls(t *testing.T, rec, criEP, csiEP string) {
	t.Helper()
	r, err := diff.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ep string) *grpc.ClientConn {
		c, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	criConn, csiConn := dial(criEP), dial(csiEP)
	ids := map[string]string{}
	ctx := context.Background()
	for _, c := range r.Calls {
		text := string(c.Request)
		for old, now := range ids {
			text = strings.ReplaceAll(text, old, now)
		}
		pkg := cri.ProtoPackage(c.Method)
		reqT, err1 := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(pkg + "." + c.Method + "Request"))
		respT, err2 := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(pkg + "." + c.Method + "Response"))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: no message types: %v %v", c.Method, err1, err2)
		}
		req, resp := reqT.New().Interface(), respT.New().Interface()
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(text), req); err != nil {
			t.Fatalf("%s: %v", c.Method, err)
		}
		conn := criConn
		if !cri.IsCRI(c.Method) {
			conn = csiConn
		}
		if err := conn.Invoke(ctx, cri.FullMethod(c.Method), req, resp); err != nil {
			if !cri.IsCRI(c.Method) || c.Method == "RunPodSandbox" {
				t.Fatalf("%s through the proxy: %v", c.Method, err)
			}
			t.Logf("%s through the proxy: %v", c.Method, err)
			continue
		}
		var old struct {
			PodSandboxID string `json:"pod_sandbox_id"`
			ContainerID  string `json:"container_id"`
		}
		_ = json.Unmarshal(c.Response, &old)
		got, _ := protojson.Marshal(resp)
		var now struct {
			PodSandboxID string `json:"podSandboxId"`
			ContainerID  string `json:"containerId"`
		}
		_ = json.Unmarshal(got, &now)
		if old.PodSandboxID != "" && now.PodSandboxID != "" {
			ids[old.PodSandboxID] = now.PodSandboxID
		}
		if old.ContainerID != "" && now.ContainerID != "" {
			ids[old.ContainerID] = now.ContainerID
		}
	}
}

// TestProxyCSIDiffsWithRun: the CSI calls a kubelet makes through `proxy
// --csi --record` compare equal, in `podstep diff`, with `podstep run
// --record`'s of the same pod. Here the kubelet is played with the very
// calls podstep run recorded (csiManifest: an inline volume and a staged
// PV, a podInfoOnMount driver, secrets), in their order, CRI calls
// through the proxy to a simulated runtime, CSI calls through the proxy in
// front of another driver of the same name: every CSI entry of the diff
// is the same call with the same normalised fields (the pod's UID and the
// root dir, which the diff learns from RunPodSandbox and the mounts).
func TestProxyCSIDiffsWithRun(t *testing.T) {
	markers, err := os.MkdirTemp("", "mk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(markers) })
	t.Setenv(proxy.MarkerDirEnv, markers)
	caps := []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}
	const driver = "test.csi.podstep.dev"

	// podstep run, recorded.
	first := csitest.Serve(t, &csitest.Node{Caps: caps})
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, []byte(csiManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	runRec := filepath.Join(t.TempDir(), "run.rec")
	root, logs := dirs(t)
	code, stdout, stderr := run(t, "run", "--auto", "--sim", "--grace-period", "0", "--settle", "0", "--csi-endpoint", driver+"="+first.Endpoint,
		"-f", file, "--root-dir", root, "--log-dir", logs, "--record", runRec)
	if code != 0 {
		t.Fatalf("run: exit %d: %s\n%s", code, stderr, stdout)
	}

	// The same requests, through the proxy in front of a second driver.
	second := csitest.Serve(t, &csitest.Node{Caps: caps})
	sock := strings.TrimPrefix(second.Endpoint, "unix://")
	d, upstream := simAndDir(t, "pxd")
	pxRec := filepath.Join(d, "proxy.rec")
	var pxOut lockedBuffer // read while the proxy writes it
	px := exec.Command(bin, "proxy", "--auto", "--listen", "unix://"+filepath.Join(d, "p.sock"), "--upstream", upstream,
		"--csi", driver+"="+second.Endpoint, "--record", pxRec)
	px.Stdout, px.Stderr = &pxOut, &pxOut
	if err := px.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Process.Kill(); _ = px.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(proxy.MovedPath(sock)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not take over %s: %s", sock, pxOut.String())
		}
	}
	replayCalls(t, runRec, "unix://"+filepath.Join(d, "p.sock"), second.Endpoint)
	time.Sleep(300 * time.Millisecond)
	_ = px.Process.Signal(os.Interrupt)
	_ = px.Wait()

	code, stdout, stderr = run(t, "diff", "-o", "json", "--different-pods", runRec, pxRec)
	if code != 0 && code != 1 {
		t.Fatalf("diff: exit %d: %s\n%s", code, stderr, stdout)
	}
	var res struct {
		Calls []struct {
			Op     string
			Method string
			Stage  string
			Fields []struct{ Path, A, B string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("diff -o json: %v\n%s", err, stdout)
	}
	var same []string
	for _, e := range res.Calls {
		if cri.IsCRI(e.Method) {
			if e.Op != "=" && e.Op != "-" {
				t.Errorf("CRI call %s (%s): %s %+v", e.Method, e.Stage, e.Op, e.Fields)
			}
			continue
		}
		if e.Op != "=" {
			t.Errorf("CSI call %s (%s): %s %+v", e.Method, e.Stage, e.Op, e.Fields)
			continue
		}
		same = append(same, e.Method)
	}
	// Consecutive NodeGetCapabilities calls are one entry (folded).
	ngc := "NodeGetCapabilities"
	want := []string{ngc, "NodePublishVolume", ngc, "NodeStageVolume", ngc, "NodePublishVolume",
		"NodeUnpublishVolume", "NodeUnpublishVolume", ngc, "NodeUnstageVolume"}
	if !slices.Equal(same, want) {
		t.Errorf("CSI entries the same:\n %v\nwant\n %v\n%s", same, want, stdout)
	}
}
