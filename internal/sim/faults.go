package sim

import (
	"context"
	"maps"
	"path"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// AnnotationPrefix starts every fault-injection annotation; see the package
// documentation for the full list.
const AnnotationPrefix = "sim.podstep.dev/"

// Fault annotation keys. Keys ending in "." take the container name (or,
// for AnnotationDelay, the CRI method name) as suffix.
const (
	AnnotationExitCode     = AnnotationPrefix + "exit-code."      // + CONTAINER: "N"
	AnnotationKeepRunning  = AnnotationPrefix + "keep-running."   // + CONTAINER: "true"
	AnnotationPullError    = AnnotationPrefix + "pull-error"      // "IMAGE=message" (one per line)
	AnnotationMissingImage = AnnotationPrefix + "missing-image"   // "IMAGE[,IMAGE...]"
	AnnotationCreateError  = AnnotationPrefix + "create-error."   // + CONTAINER: "message"
	AnnotationStartError   = AnnotationPrefix + "start-error."    // + CONTAINER: "message"
	AnnotationExecExitCode = AnnotationPrefix + "exec-exit-code." // + CONTAINER: "N"
	AnnotationExecStderr   = AnnotationPrefix + "exec-stderr."    // + CONTAINER: "text"
	AnnotationSandboxError = AnnotationPrefix + "sandbox-error"   // "message"
	AnnotationDelay        = AnnotationPrefix + "delay."          // + METHOD: "500ms"
)

// AnnotationImageConfig is not a fault: the simulator sets it, to
// ImageConfigUnknown, in the spec annotations of an image it reports
// (ImageStatus, ListImages) whose config it does not know. Such an image's
// reported user (no uid, no username) is then not "no USER, so root" but
// unknown; podstep's engine, on the simulator, says so where the kubelet's
// verifyRunAsNonRoot would need it.
//
// Of an image whose config was read from its registry at a pull
// (Options.ImageConfig) it is ImageConfigFrom + REGISTRY/REPOSITORY@DIGEST,
// with the config's entrypoint, cmd and env as JSON arrays in
// AnnotationImageEntrypoint, AnnotationImageCmd and AnnotationImageEnv
// (what the engine needs
// to say what a start rests on: sim.ImageOf). When a read failed,
// AnnotationImageConfigError says why (no secret in it; none when no
// registry answered at all).
const (
	AnnotationImageConfig      = AnnotationPrefix + "image-config"
	AnnotationImageConfigError = AnnotationPrefix + "image-config-error"
	AnnotationImageEntrypoint  = AnnotationPrefix + "image-entrypoint"
	AnnotationImageCmd         = AnnotationPrefix + "image-cmd"
	AnnotationImageEnv         = AnnotationPrefix + "image-env"
	ImageConfigUnknown         = "unknown"
	ImageConfigFrom            = "from "
)

// containerFault returns the value of the per-container fault annotation
// prefix+name.
func containerFault(ann map[string]string, prefix, name string) (string, bool) {
	v, ok := ann[prefix+name]
	return v, ok
}

// intFault parses a per-container integer fault annotation.
func intFault(ann map[string]string, prefix, name string) (int32, bool) {
	v, ok := containerFault(ann, prefix, name)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// pullFault returns the pull-error message configured for the image
// reference ref (matched exactly, or after normalization).
func pullFault(ann map[string]string, ref string) (string, bool) {
	v, ok := ann[AnnotationPullError]
	if !ok {
		return "", false
	}
	norm := normalizeRef(ref)
	for line := range strings.SplitSeq(v, "\n") {
		img, msg, found := strings.Cut(strings.TrimSpace(line), "=")
		if !found {
			continue
		}
		img = strings.TrimSpace(img)
		if img == ref || normalizeRef(img) == norm {
			return strings.TrimSpace(msg), true
		}
	}
	return "", false
}

// missingImages returns the normalized references named by the
// missing-image annotation.
func missingImages(ann map[string]string) []string {
	v, ok := ann[AnnotationMissingImage]
	if !ok {
		return nil
	}
	var out []string
	for ref := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' }) {
		out = append(out, normalizeRef(ref))
	}
	return out
}

// markMissing applies the missing-image annotation: the named images stop
// being preloaded; an already-materialized preloaded (not pulled) copy is
// dropped. Callers hold s.mu.
func (s *service) markMissing(ann map[string]string) {
	for _, ref := range missingImages(ann) {
		s.absent[ref] = true
		if img, ok := s.images[imageID(ref)]; ok && !img.pulled {
			delete(s.images, img.id)
		}
	}
}

// liveAnnotations merges the annotations of all live sandboxes, oldest
// first (newer sandboxes win). It is the fault context for calls that do
// not name a sandbox or container. Callers hold s.mu.
func (s *service) liveAnnotations() map[string]string {
	out := map[string]string{}
	for _, sb := range s.sortedSandboxes() {
		maps.Copy(out, sb.annotations())
	}
	return out
}

// requestAnnotations finds the pod annotations relevant to a request: from
// the sandbox config it carries, the pod annotations the kubelet copies
// into an ImageSpec, the sandbox or container it names, or else from all
// live sandboxes.
func (s *service) requestAnnotations(req any) map[string]string {
	if ann, ok := carriedAnnotations(req); ok {
		return ann
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lockedRequestAnnotations(req)
}

// carriedAnnotations returns the pod annotations a request carries itself:
// its sandbox config's, or those of its ImageSpec.
func carriedAnnotations(req any) (map[string]string, bool) {
	type sandboxConfigured interface {
		GetSandboxConfig() *runtimeapi.PodSandboxConfig
	}
	type imageNamed interface {
		GetImage() *runtimeapi.ImageSpec
	}
	if r, ok := req.(*runtimeapi.RunPodSandboxRequest); ok {
		return r.GetConfig().GetAnnotations(), true
	}
	if r, ok := req.(sandboxConfigured); ok && r.GetSandboxConfig() != nil {
		return r.GetSandboxConfig().GetAnnotations(), true
	}
	if r, ok := req.(imageNamed); ok && len(r.GetImage().GetAnnotations()) > 0 {
		return r.GetImage().GetAnnotations(), true
	}
	return nil, false
}

// lockedRequestAnnotations is requestAnnotations for a request that
// carries no annotations itself. Callers hold s.mu.
func (s *service) lockedRequestAnnotations(req any) map[string]string {
	type sandboxNamed interface{ GetPodSandboxId() string }
	type containerNamed interface{ GetContainerId() string }
	if r, ok := req.(containerNamed); ok {
		if c := s.containers[r.GetContainerId()]; c != nil {
			return c.faults
		}
	}
	if r, ok := req.(sandboxNamed); ok {
		if sb := s.sandboxes[r.GetPodSandboxId()]; sb != nil {
			return sb.annotations()
		}
	}
	return s.liveAnnotations()
}

// delayInterceptor implements the delay.METHOD fault: it sleeps before
// handling a unary call, returning early with the context's error when the
// caller gives up.
func (s *service) delayInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := path.Base(info.FullMethod)
	if v, ok := s.requestAnnotations(req)[AnnotationDelay+method]; ok {
		if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
	}
	return handler(ctx, req)
}

// faultError is the error returned for an injected create/start/sandbox
// failure: codes.Unknown, as containerd returns for runtime errors.
func faultError(msg string) error {
	return status.Error(codes.Unknown, msg)
}
