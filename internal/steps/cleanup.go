package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/volume"
)

// LogDirAnnotation records on the sandbox where its pod log dir is.
const LogDirAnnotation = "podstep.dev/log-dir"

// Cleaned is one sandbox `podstep cleanup` removed.
type Cleaned struct {
	SandboxID  string
	Pod        string // namespace/name
	Containers int
	Dirs       []string
	Err        error
}

// Cleanup removes every sandbox podstep created on the runtime (found by
// ManagedLabel): stops and removes its containers, stops and removes the
// sandbox, and removes its pod and log directories.
func Cleanup(ctx context.Context, c *cri.Client, grace int64) ([]Cleaned, error) {
	list, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{ManagedLabel: "true"}})
	if err != nil {
		return nil, fmt.Errorf("list podstep sandboxes: %w", err)
	}
	var out []Cleaned
	for _, sb := range list.Items {
		out = append(out, cleanSandbox(ctx, c, sb, grace))
	}
	return out, nil
}

func cleanSandbox(ctx context.Context, c *cri.Client, sb *runtimeapi.PodSandbox, grace int64) Cleaned {
	r := Cleaned{SandboxID: sb.Id, Pod: sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()}
	var errs []error
	cs, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb.Id})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, ctr := range cs.Containers {
			if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				if _, err := c.StopContainer(ctx, ctr.Id, grace); err != nil && !notFound(err) {
					errs = append(errs, err)
				}
			}
			if _, err := c.RemoveContainer(ctx, ctr.Id); err != nil && !notFound(err) {
				errs = append(errs, err)
			}
			r.Containers++
		}
	}
	if _, err := c.StopPodSandbox(ctx, sb.Id); err != nil && !notFound(err) {
		errs = append(errs, err)
	}
	if _, err := c.RemovePodSandbox(ctx, sb.Id); err != nil && !notFound(err) {
		errs = append(errs, err)
	}
	uid := sb.GetMetadata().GetUid()
	if root := sb.Annotations[RootDirAnnotation]; root != "" && uid != "" {
		d := filepath.Join(root, "pods", uid)
		if _, err := os.Stat(d); err == nil {
			if _, err := volume.TeardownPod(d); err != nil {
				errs = append(errs, err)
			} else if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			} else {
				r.Dirs = append(r.Dirs, d)
			}
		}
	}
	if d := sb.Annotations[LogDirAnnotation]; d != "" {
		if _, err := os.Stat(d); err == nil {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			} else {
				r.Dirs = append(r.Dirs, d)
			}
		}
	}
	r.Err = errors.Join(errs...)
	return r
}

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
	Managed int
}

// Info asks the runtime for its version, status, cgroup driver, and
// whether a kubelet shares it.
func Info(ctx context.Context, c *cri.Client) (*RuntimeInfo, error) {
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
			case sb.Labels[ManagedLabel] == "true":
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
