package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/sim"
)

// TestPoisonedProxy: the third carrier of TestPoisonedInputs, a kubelet's
// calls through `podstep proxy --auto` (the binary, stopped by SIGINT): the
// pod's name, namespace and UID in RunPodSandbox's metadata, the
// container's name and image, and the runtime's error for it carry each
// payload. Neither proxy's stdout and stderr (text and JSON) nor the
// replay of its --record hold a raw control.
func TestPoisonedProxy(t *testing.T) {
	for i, p := range payloads {
		for _, o := range []string{"text", "json"} {
			t.Run(fmt.Sprintf("payload%d/%s", i, o), func(t *testing.T) {
				out, errOut, rec := proxyPoisoned(t, p, o)
				checkNoControl(t, "proxy stdout", out)
				checkNoControl(t, "proxy stderr", errOut)
				if o == "text" && !strings.Contains(out, "boom") {
					t.Errorf("the runtime's error is not shown: %s", out)
				}
				if o == "json" && !jsonHolds(t, out, "boom "+p) {
					t.Errorf("-o json does not carry the runtime's error exactly: %s", out)
				}
				for _, ro := range []string{"text", "json"} {
					code, rout, rerr := run(t, "replay", "--auto", "-o", ro, rec)
					checkNoControl(t, "replay stdout", rout)
					checkNoControl(t, "replay stderr", rerr)
					if code != ExitOK {
						t.Errorf("replay of the proxy's recording: exit %d: %s", code, rerr)
					}
				}
			})
		}
	}
}

// proxyPoisoned runs the proxy between a client playing the kubelet and
// the simulated runtime, and returns its outputs and its recording.
func proxyPoisoned(t *testing.T, p, output string) (stdout, stderr, rec string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "podstep-poison") // short: unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := sim.Start(filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	sock := filepath.Join(dir, "p.sock")
	rec = filepath.Join(t.TempDir(), "proxy.rec")
	cmd := exec.Command(bin, "proxy", "--auto", "-o", output, "--listen", "unix://"+sock, "--upstream", srv.Endpoint(), "--record", rec)
	var ob, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &ob, &eb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("the proxy does not listen: %s", eb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc := &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: "web" + p, Namespace: "ns" + p, Uid: "uid" + p},
		Hostname:    "web",
		Labels:      map[string]string{"io.kubernetes.pod.name": "web" + p, "io.kubernetes.pod.namespace": "ns" + p, "io.kubernetes.pod.uid": "uid" + p},
		Annotations: map[string]string{"sim.podstep.dev/create-error.app": "boom " + p},
	}
	// The socket exists from bind, before listen: wait for it to answer.
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sc}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sc,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:  &runtimeapi.ImageSpec{Image: "busybox" + p},
			Labels: map[string]string{"io.kubernetes.container.name": "app", "io.kubernetes.pod.uid": "uid" + p}}})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("CreateContainer: %v, want the simulated error", err)
	}
	rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if testing.Verbose() {
		t.Logf("proxy stdout:\n%s\nstderr:\n%s", ob.String(), eb.String())
	}
	return ob.String(), eb.String(), rec
}
