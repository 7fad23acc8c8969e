package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/mark"
)

// Sandbox is one sandbox Run removed (or tried to).
type Sandbox struct {
	SandboxID  string
	Pod        string // namespace/name
	Containers int
	Dirs       []string // directories removed
	Kept       []string // directories not removed, each with why
	Err        error    // what the runtime refused
}

// Run removes every sandbox podstep created on the runtime (found by
// mark.ManagedLabel): stops and removes its containers, stops and removes
// the sandbox, and then removes its pod and log directories, but only those
// podstep recorded making (mark.File), and only once the runtime has
// removed the containers that could be using them.
func Run(ctx context.Context, c *cri.Client, grace int64) ([]Sandbox, error) {
	list, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{mark.ManagedLabel: "true"}})
	if err != nil {
		return nil, fmt.Errorf("list podstep sandboxes: %w", err)
	}
	var out []Sandbox
	for _, sb := range list.Items {
		out = append(out, cleanSandbox(ctx, c, sb, grace))
	}
	return out, nil
}

func cleanSandbox(ctx context.Context, c *cri.Client, sb *runtimeapi.PodSandbox, grace int64) Sandbox {
	r := Sandbox{SandboxID: sb.Id, Pod: sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()}
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
		if err := d.remove(); errors.Is(err, errGone) {
			continue
		} else if err != nil {
			r.Kept = append(r.Kept, err.Error())
			continue
		}
		r.Dirs = append(r.Dirs, d.path)
		if d.pod {
			// The local volumes' devices the pod's bind mounts used.
			for _, dm := range DeviceMounts(d.root) {
				if dm.Removed {
					r.Dirs = append(r.Dirs, dm.Path)
				} else {
					r.Kept = append(r.Kept, dm.Path+": "+dm.Why)
				}
			}
		}
	}
	r.Err = errors.Join(errs...)
	return r
}

// podstepDir is a directory a podstep sandbox's annotations point to:
// rel beneath root.
type podstepDir struct {
	path      string // root/rel, for messages
	root, rel string
	uid       string
	pod       bool  // the pod dir (else the pod log dir)
	refused   error // the annotations cannot name a dir podstep makes
}

// remove removes the dir when podstep made it for this pod: its root is
// one only its owner can change (fsperm.Private, as for --root-dir), and
// the dir, opened by handle beneath it, holds the marker naming it and the
// pod. errGone: not there.
func (d podstepDir) remove() error {
	if d.refused != nil {
		return d.refused
	}
	if err := fsperm.Private(d.root, false); err != nil {
		return fmt.Errorf("%s: not removed: %w", d.path, err)
	}
	root, real, err := openRoot(d.root)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	m, err := openMarked(root, real, d.rel, d.uid)
	if err != nil {
		return err
	}
	defer m.close()
	return m.remove(d.pod)
}

// podstepDirs lists the pod dir and pod log dir named by the sandbox's
// annotations. Neither is trusted: remove checks that podstep recorded
// making the directory there, for this pod.
func podstepDirs(sb *runtimeapi.PodSandbox) []podstepDir {
	md := sb.GetMetadata()
	uid := md.GetUid()
	var out []podstepDir
	if root := sb.Annotations[mark.RootDirAnnotation]; root != "" {
		d := podstepDir{path: root, root: root, rel: filepath.Join("pods", uid), uid: uid, pod: true}
		switch {
		case !mark.ValidUID(uid):
			d.refused = fmt.Errorf("pod uid %q cannot name a directory under %s", uid, root)
		case !filepath.IsAbs(root):
			d.refused = fmt.Errorf("%s: not an absolute path", root)
		default:
			d.path = filepath.Join(root, d.rel)
		}
		out = append(out, d)
	}
	if p := sb.Annotations[mark.LogDirAnnotation]; p != "" {
		// <log-dir>/<namespace>_<name>_<uid>, as BuildPodLogsDirectory makes it.
		name := md.GetNamespace() + "_" + md.GetName() + "_" + uid
		d := podstepDir{path: p, root: filepath.Dir(p), rel: name, uid: uid}
		if !mark.ValidUID(uid) || !filepath.IsAbs(p) || filepath.Clean(p) != p || filepath.Base(p) != name || !mark.ValidUID(name) {
			d.refused = fmt.Errorf("%s is not a pod log dir podstep makes", p)
		}
		out = append(out, d)
	}
	return out
}

// UIDs are the pod UIDs of the podstep sandboxes the runtime has.
func UIDs(ctx context.Context, c *cri.Client) (map[string]bool, error) {
	list, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{mark.ManagedLabel: "true"}})
	if err != nil {
		return nil, fmt.Errorf("list podstep sandboxes: %w", err)
	}
	out := map[string]bool{}
	for _, sb := range list.Items {
		out[sb.GetMetadata().GetUid()] = true
	}
	return out, nil
}

// notFound reports a NotFound answer: the object is already gone, which
// cleanup counts as done. status.Code sees through cri.Error's wrapping.
func notFound(err error) bool { return status.Code(err) == codes.NotFound }
