package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/sim"
)

// pullStep mirrors imageManager.EnsureImageExists
// (pkg/kubelet/images/image_manager.go), step 1 of startContainer.
type pullStep struct{ name string }

func (pullStep) mirrors() string {
	return "kubeGenericRuntimeManager.startContainer step 1 → imageManager.EnsureImageExists (pkg/kubelet/images/image_manager.go)"
}

func (pullStep) explain() string {
	return "Before creating a container the kubelet makes sure its image is on the node, by the pull policy: Never uses only a present image (else ErrImageNeverPull); IfNotPresent asks ImageStatus and pulls only when absent; Always pulls every time. A pull sends the credentials matched from the pod's pull secrets. A failed pull is ErrImagePull, and ImagePullBackOff on the retries."
}

// imageSpec is the ImageSpec of the image manager's calls (the presence
// check, PullImage and the size lookup after a pull): images/image_manager.go
// EnsureImageExists builds it from the image and the pod's annotations
// (config.* of a static pod included), and kuberuntime/convert.go
// ToRuntimeAPIImageSpec sends it without user_specified_image and, with
// RuntimeClassInImageCriAPI off (its default), without a runtime handler.
func (s pullStep) imageSpec(e *Engine) *runtimeapi.ImageSpec {
	return &runtimeapi.ImageSpec{Image: e.rt.containers[s.name].spec.Image, Annotations: e.imageAnnotations}
}

func (s pullStep) requests(e *Engine) []Request {
	c := e.rt.containers[s.name]
	reqs := []Request{{Method: "ImageStatus", Message: &runtimeapi.ImageStatusRequest{Image: s.imageSpec(e)}, Note: "is the image present?"}}
	if c.spec.ImagePullPolicy != corev1.PullNever {
		cfg, _, _ := e.sandboxConfig()
		note := "pull policy Always: pulled every time"
		if c.spec.ImagePullPolicy == corev1.PullIfNotPresent {
			note = "only if ImageStatus finds no image (pull policy IfNotPresent)"
		}
		auths := e.plannedAuth(c.spec.Image)
		if len(auths) == 0 {
			auths = []*runtimeapi.AuthConfig{nil}
		}
		for i, a := range auths {
			n := note
			if i > 0 {
				n = "only if the pull with the previous credential failed"
			}
			reqs = append(reqs, Request{Method: "PullImage", Message: &runtimeapi.PullImageRequest{Image: s.imageSpec(e), Auth: a, SandboxConfig: cfg}, Note: n})
		}
	}
	return reqs
}

func (s pullStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	img := c.spec.Image
	obj := containerObject(c)
	policy := c.spec.ImagePullPolicy
	details := []Detail{kv("pull policy", string(policy))}
	if src, ok := e.rt.authSource[img]; ok {
		details = append(details, kv("credentials", src))
	}
	// EnsureImageExists first applies the default tag: a name that does not
	// parse fails there, before any CRI call (image_manager.go).
	if err := imageNameError(img); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", img, err)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToInspectImage, obj, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, obj, "Error: "+reason.ErrInvalidImageName)
		e.tracker.Waiting(s.name, reason.ErrInvalidImageName, msg)
		r := fail(reason.ErrInvalidImageName, err, "invalid image name")
		r.Details = details
		return r
	}
	// The image manager keys its back-off by pod UID and image: containers
	// of the pod with the same image share it.
	pb := e.rt.pullBackOff[img]
	if pb.inBackOffSinceUpdate(e.now()) {
		// A retry within the pull back-off: the kubelet does not pull, it
		// reports ImagePullBackOff; the pull is tried once the back-off is over.
		msg := fmt.Sprintf("Back-off pulling image %q", img)
		e.tracker.Record(corev1.EventTypeNormal, reason.BackOffPullImage, obj, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, obj, "Error: "+reason.ErrImagePullBackOff)
		e.tracker.Waiting(s.name, reason.ErrImagePullBackOff, msg+": "+reason.ErrImagePull+": "+e.rt.pullErr[img])
		wait := e.scaled(pb.delay - e.now().Sub(pb.lastUpdate))
		details = append(details, kv(reason.ErrImagePullBackOff, fmt.Sprintf("back-off %s; waited %s%s", pb.delay, wait.Round(time.Millisecond), scaleNote(e))))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fail(reason.ErrImagePullBackOff, ctx.Err(), "interrupted during the image pull back-off")
		}
	}
	st, err := e.client.ImageStatus(ctx, s.imageSpec(e))
	if err != nil {
		// imagePullPrecheck: GetImageRef failed, so the image ref it
		// quotes is empty.
		msg := fmt.Sprintf("Failed to inspect image %q: %s", "", unwrapCRIMessage(err))
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToInspectImage, obj, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, obj, "Error: "+reason.ErrImageInspect)
		e.tracker.Waiting(s.name, reason.ErrImageInspect, msg)
		return fail(reason.ErrImageInspect, err, "ImageStatus failed")
	}
	present := st.GetImage() != nil
	if present && policy != corev1.PullAlways {
		c.imageRef = st.GetImage().GetId()
		msg := fmt.Sprintf("Container image %q already present on machine", img)
		e.tracker.Record(corev1.EventTypeNormal, reason.PulledImage, obj, msg)
		details = append(details, kv("image", c.imageRef))
		return ok("image present: "+shortImageID(c.imageRef), details...)
	}
	if policy == corev1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", img)
		e.tracker.Record(corev1.EventTypeWarning, reason.ErrImageNeverPullPolicy, obj, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, obj, "Error: "+reason.ErrImageNeverPull)
		e.tracker.Waiting(s.name, reason.ErrImageNeverPull, msg)
		r := fail(reason.ErrImageNeverPull, fmt.Errorf("%s", msg), msg)
		r.Details = details
		return r
	}
	e.tracker.Record(corev1.EventTypeNormal, reason.PullingImage, obj, fmt.Sprintf("Pulling image %q", img))
	cfg, _, _ := e.sandboxConfig()
	start := time.Now()
	resp, err := e.pullWithEach(ctx, s.imageSpec(e), e.rt.auth[img], cfg)
	if err != nil {
		msg := fmt.Sprintf("Failed to pull image %q: %s", img, unwrapCRIMessage(err))
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToPullImage, obj, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, obj, "Error: "+reason.ErrImagePull)
		e.tracker.Waiting(s.name, reason.ErrImagePull, msg)
		e.rt.pullBackOff[img] = pb.next(e.now())
		e.rt.pullErr[img] = unwrapCRIMessage(err)
		details = append(details, kv("pull back-off", e.rt.pullBackOff[img].delay.String()+" (a retry within it is ImagePullBackOff)"))
		r := fail(reason.ErrImagePull, err, "PullImage failed")
		r.Details = details
		return r
	}
	took := time.Since(start)
	c.imageRef = resp.ImageRef
	var size uint64
	var warnings []string
	// The puller's GetImageSize: ImageStatus of the same spec (images/puller.go).
	if st2, err := e.client.ImageStatus(ctx, s.imageSpec(e)); err == nil && st2.GetImage() != nil {
		size = st2.GetImage().GetSize()
		if e.simulated() {
			d, w := e.imageConfigNote(img, st2.GetImage())
			details = append(details, d...)
			warnings = append(warnings, w...)
		}
	}
	e.tracker.Record(corev1.EventTypeNormal, reason.PulledImage, obj, fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.",
		img, took.Round(time.Millisecond), took.Round(time.Millisecond), size))
	details = append(details, kv("image", resp.ImageRef))
	r := ok("pulled "+img+" → "+shortImageID(resp.ImageRef), details...)
	r.Warnings = warnings
	return r
}

// imageConfigNote says what the simulator read of the image's config at
// its pull (sim.AnnotationImageConfig): where from, as a detail; why it
// could not, as a warning given once per image and run. Nothing when no
// registry answered (an offline machine: the image stays unknown).
func (e *Engine) imageConfigNote(name string, img *runtimeapi.Image) ([]Detail, []string) {
	ann := img.GetSpec().GetAnnotations()
	if msg := ann[sim.AnnotationImageConfigError]; msg != "" {
		if e.rt.configWarned[name] {
			return nil, nil
		}
		e.rt.configWarned[name] = true
		return nil, []string{fmt.Sprintf("the simulator could not read the config of %s from its registry (%s): what its containers run and as whom is assumed", name, msg)}
	}
	im := sim.ImageOf(name, img)
	if im.Config == nil {
		return nil, nil
	}
	user := im.Config.User
	if user == "" {
		user = "none (root)"
	}
	return []Detail{kv("image config", fmt.Sprintf("from %s: entrypoint %q, cmd %q, user %s", im.Source, im.Config.Entrypoint, im.Config.Cmd, user))}, nil
}

func shortImageID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}

// pullWithEach mirrors kubeGenericRuntimeManager.PullImage
// (pkg/kubelet/kuberuntime/kuberuntime_image.go): without credentials one
// anonymous pull; else one pull per matching credential until one succeeds,
// the errors of all joined when none does.
func (e *Engine) pullWithEach(ctx context.Context, img *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (*runtimeapi.PullImageResponse, error) {
	if len(auths) == 0 {
		return e.client.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img, SandboxConfig: sb})
	}
	var errs []error
	for _, a := range auths {
		resp, err := e.client.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img, Auth: a, SandboxConfig: sb})
		if err == nil {
			return resp, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, unwrapCRIMessage(err))
	}
	return nil, fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}
