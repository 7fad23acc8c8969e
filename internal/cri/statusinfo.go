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

// cgroupInfo is the part of containerd's verbose Status info StatusCgroupInfo keeps.
func cgroupInfo(info map[string]string) map[string]string {
	var cfg struct {
		Containerd *struct {
			DefaultRuntimeName string `json:"defaultRuntimeName"`
			Runtimes           map[string]struct {
				Type    string         `json:"runtimeType"`
				Options map[string]any `json:"options"`
			} `json:"runtimes"`
		} `json:"containerd"`
	}
	if json.Unmarshal([]byte(info["config"]), &cfg) != nil || cfg.Containerd == nil {
		return nil
	}
	type runtime struct {
		Type    string         `json:"runtimeType"`
		Options map[string]any `json:"options,omitempty"`
	}
	out := struct {
		Containerd struct {
			DefaultRuntimeName string             `json:"defaultRuntimeName"`
			Runtimes           map[string]runtime `json:"runtimes"`
		} `json:"containerd"`
	}{}
	out.Containerd.DefaultRuntimeName = cfg.Containerd.DefaultRuntimeName
	out.Containerd.Runtimes = map[string]runtime{}
	for name, rt := range cfg.Containerd.Runtimes {
		r := runtime{Type: rt.Type}
		if v, ok := rt.Options["SystemdCgroup"]; ok {
			r.Options = map[string]any{"SystemdCgroup": v}
		}
		out.Containerd.Runtimes[name] = r
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return map[string]string{"config": string(b)}
}
