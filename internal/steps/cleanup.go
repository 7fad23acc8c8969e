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
	Dirs       []string // directories removed
	Kept       []string // directories not removed, each with why
	Err        error    // what the runtime refused
}

// Cleanup removes every sandbox podstep created on the runtime (found by
// ManagedLabel): stops and removes its containers, stops and removes the
// sandbox, and then removes its pod and log directories, but only those
// podstep recorded making (MadeMarker), and only once the runtime has
// removed the containers that could be using them.
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
		// Its containers may still run and use the volumes: as the kubelet's
		// cleanupOrphanedPodDirs, leave the dirs of a pod the runtime still
		// has. (A sandbox removed takes its containers with it.)
		errs = append(errs, err)
		for _, d := range podstepDirs(sb) {
			if _, err := os.Lstat(d.path); err == nil {
				r.Kept = append(r.Kept, d.path+": the runtime did not remove the pod's containers")
			}
		}
		r.Err = errors.Join(errs...)
		return r
	}
	for _, d := range podstepDirs(sb) {
		if _, err := os.Lstat(d.path); err != nil {
			continue // already gone (or never made)
		}
		if err := d.check(); err != nil {
			r.Kept = append(r.Kept, err.Error())
			continue
		}
		if d.pod {
			if _, err := volume.TeardownPod(d.path); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := os.RemoveAll(d.path); err != nil {
			errs = append(errs, err)
			continue
		}
		r.Dirs = append(r.Dirs, d.path)
	}
	r.Err = errors.Join(errs...)
	return r
}

// podstepDir is a directory a podstep sandbox's annotations point to.
type podstepDir struct {
	path  string
	pod   bool         // the pod dir (else the pod log dir)
	check func() error // nil error: podstep made it for this pod
}

// podstepDirs lists the pod dir and pod log dir named by the sandbox's
// annotations. Neither is trusted: check says whether podstep recorded
// making the directory there, for this pod.
func podstepDirs(sb *runtimeapi.PodSandbox) []podstepDir {
	md := sb.GetMetadata()
	uid := md.GetUid()
	var out []podstepDir
	refuse := func(path string, err error) podstepDir {
		return podstepDir{path: path, check: func() error { return err }}
	}
	if root := sb.Annotations[RootDirAnnotation]; root != "" {
		if !validUID(uid) {
			out = append(out, refuse(root, fmt.Errorf("pod uid %q cannot name a directory under %s", uid, root)))
		} else {
			d := filepath.Join(root, "pods", uid)
			out = append(out, podstepDir{path: d, pod: true, check: func() error {
				return checkMade(root, d, uid, func(rel string) bool { return rel == filepath.Join("pods", uid) })
			}})
		}
	}
	if d := sb.Annotations[LogDirAnnotation]; d != "" {
		// <log-dir>/<namespace>_<name>_<uid>, as BuildPodLogsDirectory makes it.
		name := md.GetNamespace() + "_" + md.GetName() + "_" + uid
		switch {
		case !validUID(uid) || filepath.Clean(d) != d:
			out = append(out, refuse(d, fmt.Errorf("%s is not a pod log dir podstep makes", d)))
		default:
			out = append(out, podstepDir{path: d, check: func() error {
				return checkMade(filepath.Dir(d), d, uid, func(rel string) bool { return rel == name })
			}})
		}
	}
	return out
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
