package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/record"
)

// TestProxyRecordBigBodies: two exec hooks answering 3.9 MB of control
// characters each through `proxy --record` (issue 25: two of 15 MB made a
// 540 MB recording that replay refused; the simulated runtime takes
// requests of 4 MiB at most, and echoes the command) make a small
// recording whose every line is under record.MaxLine, which replay reads
// and which says what it cut.
func TestProxyRecordBigBodies(t *testing.T) {
	d, upstream := simAndDir(t, "pxr")
	sock, rec := filepath.Join(d, "p.sock"), filepath.Join(d, "big.rec")
	var pxOut bytes.Buffer
	px, stop := startProxy(t, bin, sock, upstream, &pxOut, "-o", "short", "--record", rec)
	t.Cleanup(stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20), grpc.MaxCallSendMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	labels := map[string]string{"io.kubernetes.pod.name": "big", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-big"}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "big", Namespace: "default", Uid: "uid-big"},
		LogDirectory: filepath.Join(d, "logs"), Labels: labels}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cl := map[string]string{"io.kubernetes.container.name": "app"}
	for k, v := range labels {
		cl[k] = v
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}, Command: []string{"sleep", "9"}, LogPath: "app/0.log", Labels: cl}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatal(err)
	}
	const big = 3900 << 10
	for range 2 {
		r, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: c.ContainerId, Cmd: []string{"echo", strings.Repeat("\x01", big)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Stdout) < big {
			t.Fatalf("the proxy forwarded %d bytes of output, want all of it", len(r.Stdout))
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := px.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = px.Wait() // the recording is checked below
	fi, err := os.Stat(rec)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4<<20 {
		t.Errorf("recording is %d bytes, want a few MB at most", fi.Size())
	}
	data, _ := os.ReadFile(rec)
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(l) > record.MaxLine {
			t.Errorf("line %d is %d bytes, over record.MaxLine", i+1, len(l))
		}
	}
	if !bytes.Contains(data, []byte("cut by podstep: ")) {
		t.Errorf("the recording does not say what was cut")
	}
	rp := exec.Command(bin, "replay", "--auto", "-o", "json", rec)
	var rpErr bytes.Buffer
	rp.Stderr, rp.Stdout = &rpErr, nil
	if err := rp.Run(); err != nil {
		t.Errorf("replay of the recording: %v: %s", err, rpErr.String())
	}
	t.Logf("recording: %d bytes", fi.Size())
}
