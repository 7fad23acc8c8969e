package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The methods below are the CRI calls podstep sends, one each, named as in
// the CRI api.proto. Each is recorded.

// Version asks the runtime for its name and CRI API version.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	return invoke(ctx, c, "Version", c.opts.Timeout, versionRequest(), c.rt.Version)
}

// Status asks for the runtime's conditions (RuntimeReady, NetworkReady) and handlers.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return invoke(ctx, c, "Status", c.opts.Timeout, &runtimeapi.StatusRequest{Verbose: verbose}, c.rt.Status)
}

// RuntimeConfig asks for the runtime's cgroup driver (Unimplemented on containerd 1.6).
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return invoke(ctx, c, "RuntimeConfig", c.opts.Timeout, &runtimeapi.RuntimeConfigRequest{}, c.rt.RuntimeConfig)
}

// RunPodSandbox creates and starts a pod sandbox. It is not abandoned when
// ctx is cancelled (see settled), and its deadline is SandboxTimeout of the
// per-call timeout.
func (c *Client) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return invoke(settled(ctx), c, "RunPodSandbox", SandboxTimeout(c.opts.Timeout), req, c.rt.RunPodSandbox)
}

// SandboxTimeout is RunPodSandbox's deadline for a per-call timeout t: twice
// t, as the kubelet gives it (k8s.io/cri-client pkg/remote_runtime.go,
// remoteRuntimeService.RunPodSandbox: "timeout := r.timeout * 2", 4 min with
// the default runtimeRequestTimeout of 2 min), since the sandbox's network
// setup (CNI ADD) runs inside the call.
func SandboxTimeout(t time.Duration) time.Duration { return 2 * t }

// PodSandboxStatus returns a sandbox's state and network status.
func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatusResponse, error) {
	return invoke(ctx, c, "PodSandboxStatus", c.opts.Timeout, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}, c.rt.PodSandboxStatus)
}

// StopPodSandbox stops a sandbox and every container in it.
func (c *Client) StopPodSandbox(ctx context.Context, id string) (*runtimeapi.StopPodSandboxResponse, error) {
	return invoke(ctx, c, "StopPodSandbox", c.opts.Timeout, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}, c.rt.StopPodSandbox)
}

// RemovePodSandbox removes a stopped sandbox.
func (c *Client) RemovePodSandbox(ctx context.Context, id string) (*runtimeapi.RemovePodSandboxResponse, error) {
	return invoke(ctx, c, "RemovePodSandbox", c.opts.Timeout, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}, c.rt.RemovePodSandbox)
}

// ListPodSandbox lists sandboxes matching filter (nil = all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) (*runtimeapi.ListPodSandboxResponse, error) {
	return invoke(ctx, c, "ListPodSandbox", c.opts.Timeout, &runtimeapi.ListPodSandboxRequest{Filter: filter}, c.rt.ListPodSandbox)
}

// CreateContainer creates a container in a sandbox. It is not abandoned
// when ctx is cancelled (see settled).
func (c *Client) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return invoke(settled(ctx), c, "CreateContainer", c.opts.Timeout, req, c.rt.CreateContainer)
}

// StartContainer starts a created container. It is not abandoned when ctx
// is cancelled (see settled).
func (c *Client) StartContainer(ctx context.Context, id string) (*runtimeapi.StartContainerResponse, error) {
	return invoke(settled(ctx), c, "StartContainer", c.opts.Timeout, &runtimeapi.StartContainerRequest{ContainerId: id}, c.rt.StartContainer)
}

// ContainerStatus returns a container's state, exit code and reason.
func (c *Client) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatusResponse, error) {
	return invoke(ctx, c, "ContainerStatus", c.opts.Timeout, &runtimeapi.ContainerStatusRequest{ContainerId: id}, c.rt.ContainerStatus)
}

// StopContainer stops a container, sending SIGKILL after timeout seconds.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) (*runtimeapi.StopContainerResponse, error) {
	// The kubelet gives the call the grace period on top of its own timeout.
	d := c.opts.Timeout + secondsDuration(timeout)
	return invoke(ctx, c, "StopContainer", d, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}, c.rt.StopContainer)
}

// RemoveContainer removes a container.
func (c *Client) RemoveContainer(ctx context.Context, id string) (*runtimeapi.RemoveContainerResponse, error) {
	return invoke(ctx, c, "RemoveContainer", c.opts.Timeout, &runtimeapi.RemoveContainerRequest{ContainerId: id}, c.rt.RemoveContainer)
}

// ListContainers lists containers matching filter (nil = all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) (*runtimeapi.ListContainersResponse, error) {
	return invoke(ctx, c, "ListContainers", c.opts.Timeout, &runtimeapi.ListContainersRequest{Filter: filter}, c.rt.ListContainers)
}

// ExecSync runs a command in a container and waits for it, as lifecycle
// hooks and exec probes do; timeout is in seconds (0 = none). As the
// kubelet's cri-client (remoteRuntimeService.ExecSync, v1.37): a timeout
// gets the call timeout on top (the runtime's time to clean up), none
// gets no deadline (a hook's: the kubelet waits for it as long as it
// runs; only ctx ends the wait).
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout int64) (*runtimeapi.ExecSyncResponse, error) {
	d := time.Duration(0)
	if timeout > 0 {
		d = c.opts.Timeout + secondsDuration(timeout)
	}
	return invoke(ctx, c, "ExecSync", d, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout}, c.rt.ExecSync)
}

// ImageStatus returns an image's status; the response's Image is nil when absent.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (*runtimeapi.ImageStatusResponse, error) {
	return invoke(ctx, c, "ImageStatus", c.opts.Timeout, &runtimeapi.ImageStatusRequest{Image: image}, c.img.ImageStatus)
}

// PullImage pulls an image, with registry credentials when auth is set.
func (c *Client) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	return invoke(ctx, c, "PullImage", c.opts.PullTimeout, req, c.img.PullImage)
}

// RemoveImage removes an image.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) (*runtimeapi.RemoveImageResponse, error) {
	return invoke(ctx, c, "RemoveImage", c.opts.Timeout, &runtimeapi.RemoveImageRequest{Image: image}, c.img.RemoveImage)
}

// versionRequest is what the kubelet sends (its CRI client version string).
func versionRequest() *runtimeapi.VersionRequest {
	return &runtimeapi.VersionRequest{Version: "0.1.0"}
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
