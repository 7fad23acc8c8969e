//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient is the tests' own view into the runtime, independent of
// podstep's internal/cri.
type criClient struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
}

func dialCRI(t *testing.T, endpoint string) *criClient {
	t.Helper()
	if !strings.HasPrefix(endpoint, "unix://") {
		t.Fatalf("PODSTEP_ENDPOINT %q: want unix:///path", endpoint)
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &criClient{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn)}
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (c *criClient) version(t *testing.T) *runtimeapi.VersionResponse {
	t.Helper()
	v, err := c.rt.Version(ctx10(t), &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatalf("CRI Version: %v", err)
	}
	return v
}

func (c *criClient) managedSandboxes(t *testing.T) []*runtimeapi.PodSandbox {
	t.Helper()
	resp, err := c.rt.ListPodSandbox(ctx10(t), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{managedLabel: "true"}},
	})
	if err != nil {
		t.Fatalf("CRI ListPodSandbox: %v", err)
	}
	return resp.Items
}

func (c *criClient) managedContainers(t *testing.T) []*runtimeapi.Container {
	t.Helper()
	return c.containers(t, map[string]string{managedLabel: "true"})
}

func (c *criClient) containers(t *testing.T, labels map[string]string) []*runtimeapi.Container {
	t.Helper()
	resp, err := c.rt.ListContainers(ctx10(t), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: labels},
	})
	if err != nil {
		t.Fatalf("CRI ListContainers: %v", err)
	}
	return resp.Containers
}

// running finds the running container NAME of the pod with this UID (by the
// labels the kubelet puts on containers).
func (c *criClient) running(t *testing.T, podUID, name string) *runtimeapi.Container {
	t.Helper()
	cs := c.containers(t, map[string]string{
		"io.kubernetes.pod.uid":        podUID,
		"io.kubernetes.container.name": name,
	})
	for _, x := range cs {
		if x.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return x
		}
	}
	var states []string
	for _, x := range cs {
		states = append(states, x.Id[:13]+" "+x.State.String())
	}
	t.Fatalf("no running container %q in pod %s (ListContainers: %v)", name, podUID, states)
	return nil
}

// exec runs cmd in the container (CRI ExecSync) and requires exit code 0.
func (c *criClient) exec(t *testing.T, containerID string, cmd ...string) string {
	t.Helper()
	resp, err := c.rt.ExecSync(ctx10(t), &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: 10})
	if err != nil {
		t.Fatalf("CRI ExecSync %q in %.13s: %v", cmd, containerID, err)
	}
	if resp.ExitCode != 0 {
		t.Fatalf("CRI ExecSync %q in %.13s: exit code %d, stdout %q, stderr %q", cmd, containerID, resp.ExitCode, resp.Stdout, resp.Stderr)
	}
	return string(resp.Stdout)
}

// execResult runs cmd in the container (CRI ExecSync) and returns its exit
// code, stdout and stderr, whatever the exit code.
func (c *criClient) execResult(t *testing.T, containerID string, cmd ...string) (int32, string, string) {
	t.Helper()
	resp, err := c.rt.ExecSync(ctx10(t), &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: 10})
	if err != nil {
		t.Fatalf("CRI ExecSync %q in %.13s: %v", cmd, containerID, err)
	}
	return resp.ExitCode, string(resp.Stdout), string(resp.Stderr)
}

// imageStatus returns the runtime's image for ref (CRI ImageStatus), or nil
// when the runtime has no such image.
func (c *criClient) imageStatus(t *testing.T, ref string) *runtimeapi.Image {
	t.Helper()
	resp, err := c.img.ImageStatus(ctx10(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("CRI ImageStatus %s: %v", ref, err)
	}
	return resp.Image
}

// removeImage removes ref from the runtime (CRI RemoveImage; removing an
// absent image succeeds) and requires ImageStatus to say it is gone.
// containerd removes every name of the image's ID, so ref must not share
// its ID with an image other tests use.
func (c *criClient) removeImage(t *testing.T, ref string) {
	t.Helper()
	if _, err := c.img.RemoveImage(ctx10(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("CRI RemoveImage %s: %v", ref, err)
	}
	if img := c.imageStatus(t, ref); img != nil {
		t.Fatalf("CRI ImageStatus %s after RemoveImage: still present (id %s, tags %v)", ref, img.Id, img.RepoTags)
	}
}
