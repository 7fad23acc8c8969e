package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/mark"
)

// RuntimeInfo is what `podstep info` shows of a runtime.
type RuntimeInfo struct {
	Version      *runtimeapi.VersionResponse
	Status       *runtimeapi.StatusResponse
	CgroupDriver string // "" when the runtime does not say
	Ready        bool   // RuntimeReady and NetworkReady
	// Foreign counts sandboxes with kubelet labels that podstep did not
	// make: a kubelet shares this runtime and garbage-collects pods it does
	// not know, podstep's included.
	Foreign int
	// Managed counts sandboxes podstep made (mark.ManagedLabel).
	Managed int
}

// Info serves `podstep info`: it asks the runtime for its version, status,
// cgroup driver (RuntimeConfig, when the runtime implements it), and
// whether a kubelet shares it (sandboxes with kubelet labels and no
// mark.ManagedLabel).
func Info(ctx context.Context, c *Client) (*RuntimeInfo, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return nil, err
	}
	st, err := c.Status(ctx, false)
	if err != nil {
		return nil, err
	}
	info := &RuntimeInfo{Version: v, Status: st, Ready: ready(st)}
	if rc, err := c.RuntimeConfig(ctx); err == nil {
		switch rc.GetLinux().GetCgroupDriver() {
		case runtimeapi.CgroupDriver_SYSTEMD:
			info.CgroupDriver = "systemd"
		case runtimeapi.CgroupDriver_CGROUPFS:
			info.CgroupDriver = "cgroupfs"
		}
	}
	if list, err := c.ListPodSandbox(ctx, nil); err == nil {
		for _, sb := range list.Items {
			switch {
			case sb.Labels[mark.ManagedLabel] == "true":
				info.Managed++
			case sb.Labels["io.kubernetes.pod.uid"] != "":
				info.Foreign++
			}
		}
	}
	return info, nil
}

func ready(st *runtimeapi.StatusResponse) bool {
	rr, nr := false, false
	for _, c := range st.GetStatus().GetConditions() {
		switch c.Type {
		case runtimeapi.RuntimeReady:
			rr = c.Status
		case runtimeapi.NetworkReady:
			nr = c.Status
		}
	}
	return rr && nr
}
