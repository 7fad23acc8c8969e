package cri

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatusCgroupInfo asks Status with verbose info (as `crictl info` does)
// and keeps of the info only what names each containerd runtime handler's
// cgroup driver: info["config"] reduced to
// {"containerd":{"defaultRuntimeName","runtimes":{NAME:{"runtimeType","options":{"SystemdCgroup"}}}}}.
// The rest of the runtime's config (which can hold registry credentials) is
// neither returned nor recorded. Without such a config, Info is empty.
func (c *Client) StatusCgroupInfo(ctx context.Context) (*runtimeapi.StatusResponse, error) {
	return invoke(ctx, c, "Status", c.opts.Timeout, &runtimeapi.StatusRequest{Verbose: true},
		func(ctx context.Context, req *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
			resp, err := c.rt.Status(ctx, req, opts...)
			if err != nil {
				return resp, err
			}
			resp.Info = cgroupInfo(resp.Info)
			return resp, nil
		})
}

// ContainerdConfig is the part of containerd's verbose Status info
// "config" (its CRI plugin config) podstep reads: the default runtime
// handler and each handler's type and options (the runc shim's
// SystemdCgroup is its cgroup driver). It is the one definition, for the
// redaction here and the engine's cgroup driver (internal/steps).
type ContainerdConfig struct {
	Containerd *struct {
		DefaultRuntimeName string                       `json:"defaultRuntimeName"`
		Runtimes           map[string]ContainerdRuntime `json:"runtimes"`
	} `json:"containerd"`
}

// ContainerdRuntime is one runtime handler of ContainerdConfig.
type ContainerdRuntime struct {
	Type    string         `json:"runtimeType"`
	Options map[string]any `json:"options,omitempty"`
}

// ParseContainerdConfig reads info["config"]; false when it is absent or
// not containerd's.
func ParseContainerdConfig(info map[string]string) (*ContainerdConfig, bool) {
	raw, found := info["config"]
	if !found {
		return nil, false
	}
	var cfg ContainerdConfig
	if json.Unmarshal([]byte(raw), &cfg) != nil || cfg.Containerd == nil {
		return nil, false
	}
	return &cfg, true
}

// cgroupInfo is the part of containerd's verbose Status info StatusCgroupInfo keeps.
func cgroupInfo(info map[string]string) map[string]string {
	cfg, ok := ParseContainerdConfig(info)
	if !ok {
		return nil
	}
	runtimes := map[string]ContainerdRuntime{}
	for name, rt := range cfg.Containerd.Runtimes {
		r := ContainerdRuntime{Type: rt.Type}
		if v, ok := rt.Options["SystemdCgroup"]; ok {
			r.Options = map[string]any{"SystemdCgroup": v}
		}
		runtimes[name] = r
	}
	cfg.Containerd.Runtimes = runtimes
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	return map[string]string{"config": string(b)}
}
