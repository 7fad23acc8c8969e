package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/safe"
)

// ImageSize is the size every simulated image reports, in bytes.
const ImageSize = 4_404_019

// imageFsMountpoint is the image filesystem ImageFsInfo reports.
const imageFsMountpoint = "/var/lib/podstep-sim/io.containerd.snapshotter.v1.overlayfs"

// preloadedImages are present in a new store, mirroring the images the test
// containerd harness (hack/containerd-up.sh) imports offline. Any other
// reference containing "busybox" or "pause" is preloaded too, materialized
// on first lookup.
var preloadedImages = []string{
	"docker.io/library/busybox:1.35",
	"podstep.local/pause:1.0",
}

// image is one image in the simulated store.
type image struct {
	id          string
	repoTags    []string
	repoDigests []string
	pinned      bool
	pulled      bool // pulled explicitly (not just preloaded)
	// read is the config read from the image's registry at a pull
	// (Options.ImageConfig), nil when none was; readErr is why a read
	// failed, for the user ("" when it was not tried, or no registry
	// answered at all).
	read    *imageconfig.Result
	readErr string
}

// proto is the image as ImageStatus and ListImages report it. The user is
// what containerd reports (getUserFromImage): a numeric USER as uid, a
// name as username, neither for an image with no USER (which the kubelet's
// getImageUser then counts as root). The config is the one read from the
// registry at a pull (its source, entrypoint and cmd in the spec's
// annotations: AnnotationImageConfig and the others, so that podstep's
// engine can say what a start rests on), else the built-in one
// (knownImage). Of an image whose config the simulator does not know it
// reports neither uid nor username, and says so: ImageConfigUnknown in
// its spec's annotations (with AnnotationImageConfigError when a read
// failed).
func (img *image) proto() *runtimeapi.Image {
	spec := ""
	if len(img.repoTags) > 0 {
		spec = img.repoTags[0]
	}
	out := &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    append([]string(nil), img.repoTags...),
		RepoDigests: append([]string(nil), img.repoDigests...),
		Size:        ImageSize,
		Pinned:      img.pinned,
		Spec:        &runtimeapi.ImageSpec{Image: spec},
	}
	user := ""
	if img.read != nil {
		out.Spec.Annotations = readAnnotations(img.read)
		user = img.read.Config.User
	} else if cfg, known := knownImage(img.name()); known {
		user = cfg.user
	} else {
		out.Spec.Annotations = map[string]string{AnnotationImageConfig: ImageConfigUnknown}
		if img.readErr != "" {
			out.Spec.Annotations[AnnotationImageConfigError] = img.readErr
		}
		return out
	}
	uid, username := userFromImage(user)
	if uid != nil {
		out.Uid = &runtimeapi.Int64Value{Value: *uid}
	}
	out.Username = username
	return out
}

// name is the image's first repo tag, else its first repo digest.
func (img *image) name() string {
	if len(img.repoTags) > 0 {
		return img.repoTags[0]
	}
	if len(img.repoDigests) > 0 {
		return img.repoDigests[0]
	}
	return img.id
}

// userFromImage splits an image config's User as containerd's CRI does
// (getUserFromImage, internal/cri/server/images/image_status.go): "" is
// neither; "uid[:gid]" a uid; a name (with or without :group) a username.
func userFromImage(user string) (*int64, string) {
	if user == "" {
		return nil, ""
	}
	user, _, _ = strings.Cut(user, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &uid, ""
	}
	return nil, user
}

// ref returns the reference containerd reports as a container's image_ref:
// the repo digest when there is one, else the image ID.
func (img *image) ref() string {
	if len(img.repoDigests) > 0 {
		return img.repoDigests[0]
	}
	return img.id
}

// normalizeRef normalizes an image reference as containerd does (docker
// reference rules): "busybox:1.35" -> "docker.io/library/busybox:1.35",
// no tag and no digest -> ":latest". Image IDs are returned unchanged.
func normalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || isImageID(ref) {
		return ref
	}
	name, digest := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		name, digest = ref[:i], ref[i:]
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i:]
	}
	domain, rest := "docker.io", name
	if i := strings.Index(name, "/"); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			domain, rest = first, name[i+1:]
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if tag == "" && digest == "" {
		tag = ":latest"
	}
	return domain + "/" + rest + tag + digest
}

// isImageID reports whether ref is an image ID: "sha256:" + 64 hex digits,
// or the bare 64 hex digits.
func isImageID(ref string) bool {
	h := strings.TrimPrefix(ref, "sha256:")
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// imageID is the ID of the image a normalized reference names.
func imageID(norm string) string {
	if isImageID(norm) {
		if strings.HasPrefix(norm, "sha256:") {
			return norm
		}
		return "sha256:" + norm
	}
	sum := sha256.Sum256([]byte(norm))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// isPreloaded reports whether ref names an image of the preloaded set.
func isPreloaded(ref string) bool {
	return strings.Contains(ref, "busybox") || strings.Contains(ref, "pause")
}

// addImage stores the image ref names and returns it. Callers hold s.mu.
func (s *service) addImage(ref string, pulled bool) *image {
	norm := normalizeRef(ref)
	id := imageID(norm)
	if img, ok := s.images[id]; ok {
		img.pulled = img.pulled || pulled
		return img
	}
	name, digest := norm, ""
	if i := strings.Index(norm, "@"); i >= 0 {
		name, digest = norm[:i], norm[i+1:]
	}
	repo := name
	var tags []string
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo = name[:i]
		tags = []string{name}
	}
	if digest == "" {
		sum := sha256.Sum256([]byte("manifest:" + norm))
		digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	img := &image{
		id:          id,
		repoTags:    tags,
		repoDigests: []string{repo + "@" + digest},
		pinned:      strings.Contains(repo, "pause"),
		pulled:      pulled,
	}
	s.images[id] = img
	return img
}

// lookupImage finds an image by reference or ID, materializing preloaded
// images on demand. Callers hold s.mu.
func (s *service) lookupImage(ref string) *image {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil
	}
	if isImageID(ref) {
		return s.images[imageID(ref)]
	}
	norm := normalizeRef(ref)
	if img, ok := s.images[imageID(norm)]; ok {
		return img
	}
	if strings.Contains(norm, "@") {
		// A repo digest the store reported (a container's image_ref).
		for _, img := range s.images {
			if slices.Contains(img.repoDigests, norm) {
				return img
			}
		}
	}
	if isPreloaded(norm) && !s.absent[norm] {
		return s.addImage(norm, false)
	}
	return nil
}

func imageRefOf(spec *runtimeapi.ImageSpec) (string, error) {
	ref := strings.TrimSpace(spec.GetImage())
	if ref == "" {
		return "", status.Error(codes.InvalidArgument, "image spec must include an image reference")
	}
	return ref, nil
}

// ListImages implements runtimeapi.ImageServiceServer.
func (s *service) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		if img := s.lookupImage(ref); img != nil {
			resp.Images = append(resp.Images, img.proto())
		}
		return resp, nil
	}
	ids := make([]string, 0, len(s.images))
	for id := range s.images {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return sortKey(s.images[ids[i]]) < sortKey(s.images[ids[j]])
	})
	for _, id := range ids {
		resp.Images = append(resp.Images, s.images[id].proto())
	}
	return resp, nil
}

func sortKey(img *image) string {
	if len(img.repoTags) > 0 {
		return img.repoTags[0]
	}
	return img.repoDigests[0]
}

// ImageStatus implements runtimeapi.ImageServiceServer. An image that is
// not present yields a response with a nil Image, as the CRI requires.
func (s *service) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref, err := imageRefOf(req.GetImage())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markMissing(req.GetImage().GetAnnotations())
	resp := &runtimeapi.ImageStatusResponse{}
	if img := s.lookupImage(ref); img != nil {
		resp.Image = img.proto()
	}
	return resp, nil
}

// PullImage implements runtimeapi.ImageServiceServer. It succeeds (no
// layer is pulled) unless the pull-error fault names the image, and
// returns the image ID as containerd does. With Options.ImageConfig it
// reads the image's config from its registry first, with the request's
// credentials, as a runtime's pull would: a registry that refuses the read
// (401, 403, 404) fails the pull with containerd 2's words (pullRefused);
// one that cannot be reached leaves the image's config unknown.
func (s *service) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	resp, norm, err := s.pullTarget(req)
	if resp != nil || err != nil {
		return resp, err
	}
	var res *imageconfig.Result
	var readErr error
	if s.opts.ImageConfig != nil {
		r, err := s.opts.ImageConfig.Fetch(ctx, norm, authOf(req.GetAuth()))
		var e *imageconfig.Error
		if errors.As(err, &e) && e.Refused() {
			return nil, pullRefused(norm, e, req.GetAuth())
		}
		res, readErr = &r, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.absent, norm)
	img := s.addImage(norm, true)
	if s.opts.ImageConfig != nil {
		img.keepRead(res, readErr)
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.id}, nil
}

// pullTarget is PullImage up to the registry: the answer when there is
// one already (an image ID present, or an error: a fault, an absent ID),
// else the normalized reference to pull.
func (s *service) pullTarget(req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, string, error) {
	ref, err := imageRefOf(req.GetImage())
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ann, ok := carriedAnnotations(req)
	if !ok {
		ann = s.lockedRequestAnnotations(req)
	}
	s.markMissing(ann)
	if msg, ok := pullFault(ann, ref); ok {
		return nil, "", status.Error(codes.Unknown, fmt.Sprintf("failed to pull and unpack image %q: %s", normalizeRef(ref), msg))
	}
	if isImageID(ref) {
		if img := s.images[imageID(ref)]; img != nil {
			return &runtimeapi.PullImageResponse{ImageRef: img.id}, "", nil
		}
		return nil, "", status.Error(codes.NotFound, fmt.Sprintf("failed to pull and unpack image %q: not found", ref))
	}
	return nil, normalizeRef(ref), nil
}

// pullRefused is the error containerd 2 answers a pull the registry
// refused with (seen on the harness, test/integration's pullDenied): a
// missing tag or repository is NotFound "REF: not found"; a 401 or 403 to
// the credentials sent names the manifest request; with no credentials,
// "pull access denied" (the start of containerd's text, whose end depends
// on the registry's challenge).
func pullRefused(norm string, e *imageconfig.Error, a *runtimeapi.AuthConfig) error {
	prefix := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve image: ", norm)
	switch {
	case e.Status == http.StatusNotFound:
		return status.Error(codes.NotFound, prefix+safe.Line(norm)+": not found")
	case authOf(a) != nil && e.URL != "":
		return status.Error(codes.Unknown, fmt.Sprintf("%sunexpected status from HEAD request to %s: %d %s", prefix, safe.Line(e.URL), e.Status, http.StatusText(e.Status)))
	default:
		return status.Error(codes.Unknown, prefix+"pull access denied, repository does not exist or may require authorization: authorization failed")
	}
}

// authOf is the request's credentials for the config read (nil: none).
func authOf(a *runtimeapi.AuthConfig) *imageconfig.Auth {
	if a == nil || a.GetUsername() == "" && a.GetPassword() == "" && a.GetAuth() == "" && a.GetIdentityToken() == "" && a.GetRegistryToken() == "" {
		return nil
	}
	return &imageconfig.Auth{Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth(),
		IdentityToken: a.GetIdentityToken(), RegistryToken: a.GetRegistryToken()}
}

// keepRead keeps the config read (res) with the image, or why it could
// not be read (err). A registry that cannot be reached at all (an offline
// machine) leaves the image as it was: unknown, no warning.
func (img *image) keepRead(res *imageconfig.Result, err error) {
	var e *imageconfig.Error
	switch {
	case err == nil:
		img.read, img.readErr = res, ""
	case errors.As(err, &e) && e.Unreachable:
	case e != nil:
		img.readErr = safe.Line(e.Err.Error()) // the engine names the image
	default:
		img.readErr = safe.Line(err.Error())
	}
}

// RemoveImage implements runtimeapi.ImageServiceServer. Removing an image
// that is not present is not an error.
func (s *service) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref, err := imageRefOf(req.GetImage())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.lookupImage(ref)
	if img == nil {
		return &runtimeapi.RemoveImageResponse{}, nil
	}
	delete(s.images, img.id)
	for _, t := range img.repoTags {
		s.absent[t] = true
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo implements runtimeapi.ImageServiceServer with one image
// filesystem whose usage is the sum of the stored images.
func (s *service) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := uint64(len(s.images))
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  s.now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: imageFsMountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: n * ImageSize},
		InodesUsed: &runtimeapi.UInt64Value{Value: n * 100},
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems: []*runtimeapi.FilesystemUsage{fs},
	}, nil
}

// Image is what Decide knows of a container's image: its name as the pod
// names it, and the config read from its registry, if one was.
type Image struct {
	Name string
	// Config is the config read from the registry; nil when none was
	// (then the built-in one of knownImage, else unknown).
	Config *imageconfig.Config
	// Source is where Config was read: REGISTRY/REPOSITORY@DIGEST.
	Source string
}

// imageInfo is the container's image for Decide.
func (c *container) imageInfo() Image {
	im := Image{Name: c.imageName()}
	if c.image != nil && c.image.read != nil {
		im.Config, im.Source = &c.image.read.Config, c.image.read.Source
	}
	return im
}

// readAnnotations are the spec annotations of an image whose config was
// read: its source, entrypoint, cmd and env (JSON arrays).
func readAnnotations(r *imageconfig.Result) map[string]string {
	ann := map[string]string{AnnotationImageConfig: ImageConfigFrom + r.Source}
	if b, err := json.Marshal(r.Config.Entrypoint); err == nil && len(r.Config.Entrypoint) > 0 {
		ann[AnnotationImageEntrypoint] = string(b)
	}
	if b, err := json.Marshal(r.Config.Cmd); err == nil && len(r.Config.Cmd) > 0 {
		ann[AnnotationImageCmd] = string(b)
	}
	if b, err := json.Marshal(r.Config.Env); err == nil && len(r.Config.Env) > 0 {
		ann[AnnotationImageEnv] = string(b)
	}
	return ann
}

// ImageOf is the Image an ImageStatus answer of the simulator describes
// (name: the image as the pod names it): the config it read from the
// registry, as its annotations carry it, or none.
func ImageOf(name string, img *runtimeapi.Image) Image {
	im := Image{Name: name}
	ann := img.GetSpec().GetAnnotations()
	src, ok := strings.CutPrefix(ann[AnnotationImageConfig], ImageConfigFrom)
	if !ok || src == "" {
		return im
	}
	cfg := &imageconfig.Config{}
	if v := ann[AnnotationImageEntrypoint]; v != "" && json.Unmarshal([]byte(v), &cfg.Entrypoint) != nil {
		return im
	}
	if v := ann[AnnotationImageCmd]; v != "" && json.Unmarshal([]byte(v), &cfg.Cmd) != nil {
		return im
	}
	if v := ann[AnnotationImageEnv]; v != "" && json.Unmarshal([]byte(v), &cfg.Env) != nil {
		return im
	}
	switch {
	case img.GetUid() != nil:
		cfg.User = strconv.FormatInt(img.GetUid().GetValue(), 10)
	default:
		cfg.User = img.GetUsername()
	}
	im.Config, im.Source = cfg, src
	return im
}
