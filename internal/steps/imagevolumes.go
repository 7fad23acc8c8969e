package steps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

// imageVolumesStep mirrors kubeGenericRuntimeManager.getImageVolumes
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go): SyncPod's lazyStart,
// before the first container of the sync starts (after the sandbox, before
// the first init container's image), ensures the image of every image
// volume (volumes[].image, KEP-4639) with the image manager, in spec order:
// the same EnsureImageExists (pkg/kubelet/images/image_manager.go) as a
// container's image, with the pod's pull secrets and the volume's pull
// policy. Each container mounting the volume then gets the ImageSpec in its
// CRI Mount (makeMounts, kubelet_pods.go); a volume whose image could not
// be pulled fails those containers (toKubeContainerImageVolumes).
type imageVolumesStep struct{}

func (imageVolumesStep) mirrors() string {
	return "kubeGenericRuntimeManager.SyncPod → lazyStart → getImageVolumes → imageManager.EnsureImageExists (pkg/kubelet/kuberuntime/kuberuntime_manager.go, images/image_manager.go)"
}

func (imageVolumesStep) explain() string {
	return "Before it starts the pod's first container, the kubelet makes sure the image of each image volume is on the node, exactly as for a container's image: by the volume's pullPolicy (IfNotPresent unless the tag is :latest), ImageStatus then PullImage with the credentials matched from the pod's image pull secrets. The volume plugin itself makes nothing on disk: each container that mounts the volume gets a CRI Mount with the image (its ID, the reference as written, the pod's annotations) instead of a host path, and the subPath of the volumeMount as image_sub_path; the runtime mounts the image's filesystem read-only. A pull that fails is ErrImagePull for every container mounting the volume."
}

// imageVolumeSpec is the ImageSpec of the image manager's calls for
// reference ref: the image and the pod's annotations (EnsureImageExists), as
// for a container's image (pullStep.imageSpec).
func (e *Engine) imageVolumeSpec(ref string) *runtimeapi.ImageSpec {
	return &runtimeapi.ImageSpec{Image: ref, Annotations: e.imageAnnotations}
}

func (imageVolumesStep) requests(e *Engine) []Request {
	var reqs []Request
	cfg, _, _ := e.sandboxConfig()
	for _, v := range e.pod.Spec.Volumes {
		if v.Image == nil {
			continue
		}
		spec := e.imageVolumeSpec(v.Image.Reference)
		reqs = append(reqs, Request{Method: "ImageStatus", Message: &runtimeapi.ImageStatusRequest{Image: spec}, Note: "volume " + v.Name + ": is the image present?"})
		if v.Image.PullPolicy == corev1.PullNever {
			continue
		}
		note := "volume " + v.Name + ": pull policy Always: pulled every time"
		if v.Image.PullPolicy == corev1.PullIfNotPresent {
			note = "volume " + v.Name + ": only if ImageStatus finds no image (pull policy IfNotPresent)"
		}
		auths := e.plannedAuth(v.Image.Reference)
		if len(auths) == 0 {
			auths = []*runtimeapi.AuthConfig{nil}
		}
		for i, a := range auths {
			n := note
			if i > 0 {
				n = "volume " + v.Name + ": only if the pull with the previous credential failed"
			}
			reqs = append(reqs, Request{Method: "PullImage", Message: &runtimeapi.PullImageRequest{Image: spec, Auth: a, SandboxConfig: cfg}, Note: n})
		}
	}
	return reqs
}

func (imageVolumesStep) run(ctx context.Context, e *Engine) Result {
	e.rt.imageVolumes = map[string]*runtimeapi.ImageSpec{}
	var details []Detail
	n := 0
	for _, v := range e.pod.Spec.Volumes {
		if v.Image == nil {
			continue
		}
		n++
		id, d, r := e.ensureVolumeImage(ctx, v)
		details = append(details, d...)
		if r != nil {
			r.Details = append(details, r.Details...)
			return *r
		}
		// getImageVolumes: the spec each mount of the volume carries.
		e.rt.imageVolumes[v.Name] = &runtimeapi.ImageSpec{Image: id, UserSpecifiedImage: v.Image.Reference, Annotations: e.imageAnnotations}
	}
	return ok(fmt.Sprintf("%s ready", plural(n, "image volume", "image volumes")), details...)
}

// ensureVolumeImage is EnsureImageExists for one image volume (the pod is
// the events' object): the image ID, the step's details, and, on failure,
// the step's result.
func (e *Engine) ensureVolumeImage(ctx context.Context, v corev1.Volume) (string, []Detail, *Result) {
	ref, policy := v.Image.Reference, v.Image.PullPolicy
	spec := e.imageVolumeSpec(ref)
	details := []Detail{kv(v.Name, fmt.Sprintf("image %s, pull policy %s", ref, policy))}
	if src, ok := e.rt.authSource[ref]; ok {
		details = append(details, kv("  credentials", src))
	}
	failed := func(why string, err error, summary string) (string, []Detail, *Result) {
		e.imageVolumeFailed(v.Name, why, unwrapMsg(err))
		r := fail(why, err, summary)
		return "", details, &r
	}
	st, err := e.client.ImageStatus(ctx, spec)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %s", "", unwrapCRIMessage(err))
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToInspectImage, "", msg)
		return failed(reason.ErrImageInspect, fmt.Errorf("%s", msg), "volume "+v.Name+": ImageStatus failed")
	}
	if img := st.GetImage(); img != nil && policy != corev1.PullAlways {
		e.tracker.Record(corev1.EventTypeNormal, reason.PulledImage, "", fmt.Sprintf("Container image %q already present on machine", ref))
		return img.GetId(), append(details, kv("  image", img.GetId()+" (present)")), nil
	}
	if policy == corev1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", ref)
		e.tracker.Record(corev1.EventTypeWarning, reason.ErrImageNeverPullPolicy, "", msg)
		return failed(reason.ErrImageNeverPull, fmt.Errorf("%s", msg), "volume "+v.Name+": image absent, pull policy Never")
	}
	e.tracker.Record(corev1.EventTypeNormal, reason.PullingImage, "", fmt.Sprintf("Pulling image %q", ref))
	cfg, _, _ := e.sandboxConfig()
	start := time.Now()
	resp, err := e.pullWithEach(ctx, spec, e.plannedAuth(ref), cfg)
	if err != nil {
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToPullImage, "", fmt.Sprintf("Failed to pull image %q: %s", ref, unwrapCRIMessage(err)))
		return failed(reason.ErrImagePull, err, "volume "+v.Name+": PullImage failed")
	}
	took := time.Since(start).Round(time.Millisecond)
	var size uint64
	if st2, err := e.client.ImageStatus(ctx, spec); err == nil && st2.GetImage() != nil {
		size = st2.GetImage().GetSize()
	}
	e.tracker.Record(corev1.EventTypeNormal, reason.PulledImage, "", fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.", ref, took, took, size))
	return resp.ImageRef, append(details, kv("  image", resp.ImageRef+" (pulled)")), nil
}

// imageVolumeFailed is toKubeContainerImageVolumes for a volume whose image
// the kubelet could not ensure: each container mounting it waits with the
// pull's reason and records FailedToCreateContainer ("Error: <message>").
func (e *Engine) imageVolumeFailed(volume, why, msg string) {
	for _, name := range e.rt.order {
		c := e.rt.containers[name]
		for _, m := range c.spec.VolumeMounts {
			if m.Name == volume {
				e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, containerObject(c), "Error: "+msg)
				e.tracker.Waiting(name, why, msg)
				break
			}
		}
	}
}

// plannedImageVolumes are the ImageSpecs the containers' mounts carry: the
// pulled ones, or, before the image-volumes step ran, the reference with a
// placeholder ID.
func (e *Engine) plannedImageVolumes() map[string]*runtimeapi.ImageSpec {
	if e.rt.imageVolumes != nil {
		return e.rt.imageVolumes
	}
	out := map[string]*runtimeapi.ImageSpec{}
	for _, v := range e.pod.Spec.Volumes {
		if v.Image != nil {
			out[v.Name] = &runtimeapi.ImageSpec{Image: "<image id from ImageStatus>", UserSpecifiedImage: v.Image.Reference, Annotations: e.imageAnnotations}
		}
	}
	return out
}

// hasImageVolumes reports whether the pod has an image volume.
func hasImageVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			return true
		}
	}
	return false
}

// imageMountHint explains a refused CreateContainer whose config mounts an
// image volume: the kubelet sends such a mount with no host path, which a
// runtime that predates CRI Mount.image (containerd 1.x and 2.0, CRI-O
// before 1.31) reads as a bind mount of "".
func imageMountHint(cfg *runtimeapi.ContainerConfig) []Detail {
	for _, m := range cfg.GetMounts() {
		if m.GetImage() != nil {
			return []Detail{kv("image volumes", "the mounts of image volumes carry the image and no host_path; a runtime that predates CRI Mount.image (containerd before 2.1, CRI-O before 1.31) takes them for bind mounts of \"\" and fails (containerd 1.6: failed to mkdir \"\")")}
		}
	}
	return nil
}
