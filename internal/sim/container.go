package sim

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// makeContainerName is containerd's reserved container name.
func makeContainerName(c *runtimeapi.ContainerMetadata, s *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{c.GetName(), s.GetName(), s.GetNamespace(), s.GetUid(), fmt.Sprint(c.GetAttempt())}, "_")
}

// containerNotFound is containerd's error for an unknown container ID.
func containerNotFound(id string) error {
	return status.Error(codes.NotFound, fmt.Sprintf("an error occurred when try to find container %q: not found", id))
}

// sortedContainers returns the containers in creation order. Callers hold s.mu.
func (s *service) sortedContainers() []*container {
	out := make([]*container, 0, len(s.containers))
	for _, c := range s.containers {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// getContainer returns the container with the given ID, its scheduled exit
// applied. Callers hold s.mu.
func (s *service) getContainer(id string) (*container, error) {
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "container id must be set")
	}
	c := s.containers[id]
	if c == nil {
		return nil, containerNotFound(id)
	}
	c.refresh(s.now())
	return c, nil
}

// deleteContainer forgets a container and releases its name. Callers hold s.mu.
func (s *service) deleteContainer(id string) {
	if c := s.containers[id]; c != nil {
		c.serve.close()
		delete(s.containerNames, c.name)
		delete(s.containers, id)
	}
}

// CreateContainer implements runtimeapi.RuntimeServiceServer.
func (s *service) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	sbID := req.GetPodSandboxId()
	cfg := req.GetConfig()
	if sbID == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox id must be set")
	}
	if cfg.GetMetadata() == nil {
		return nil, status.Error(codes.InvalidArgument, "container config must include metadata")
	}
	if cfg.GetMetadata().GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "container metadata must include a name")
	}
	ref, err := imageRefOf(cfg.GetImage())
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[sbID]
	if sb == nil {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("failed to find sandbox id %q: not found", sbID))
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Error(codes.FailedPrecondition, fmt.Sprintf("sandbox container %q is not running", sbID))
	}
	faults := map[string]string{}
	maps.Copy(faults, sb.annotations())
	maps.Copy(faults, req.GetSandboxConfig().GetAnnotations())
	maps.Copy(faults, cfg.GetAnnotations())
	s.markMissing(faults)

	cname := cfg.GetMetadata().GetName()
	if msg, ok := containerFault(faults, AnnotationCreateError, cname); ok {
		return nil, faultError(msg)
	}
	name := makeContainerName(cfg.GetMetadata(), sb.config.GetMetadata())
	if other, ok := s.containerNames[name]; ok {
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to reserve container name %q: name %q is reserved for %q", name, name, other))
	}
	img := s.lookupImage(ref)
	if img == nil {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("failed to resolve image %q: not found", ref))
	}
	id, seq := s.newID(cname, sbID, fmt.Sprint(cfg.GetMetadata().GetAttempt()))
	c := &container{
		id:         id,
		seq:        seq,
		name:       name,
		sandboxID:  sbID,
		config:     proto.Clone(cfg).(*runtimeapi.ContainerConfig),
		faults:     faults,
		image:      img,
		completes:  runsToCompletion(ctx),
		probePorts: probePorts(ctx),
		state:      runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt:  s.now(),
	}
	if dir := sb.config.GetLogDirectory(); dir != "" && cfg.GetLogPath() != "" {
		p, err := s.containerLog(dir, cfg.GetLogPath())
		if err != nil {
			return nil, err
		}
		c.logPath = p.String()
	}
	s.containers[id] = c
	s.containerNames[name] = id
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer implements runtimeapi.RuntimeServiceServer. It decides
// how the simulated process behaves (Decide) and writes the container's
// log.
func (s *service) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to set starting state for container %q: container is in %s state", c.id, c.state))
	}
	sb := s.sandboxes[c.sandboxID]
	if sb == nil || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Error(codes.FailedPrecondition, fmt.Sprintf("sandbox container %q is not running", c.sandboxID))
	}
	now := s.now()
	cname := c.config.GetMetadata().GetName()
	if msg, ok := containerFault(c.faults, AnnotationStartError, cname); ok {
		c.exit(now, 128, "StartError")
		c.message = msg
		return nil, faultError(msg)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now
	// The process serves its ports while it runs (listen.go).
	s.serveContainer(c, sb)
	if b := Decide(c.config, c.faults, c.imageInfo(), c.completes); b.Exits {
		c.exitAt, c.exitAtCode = now.Add(s.opts.InitRunTime+b.After), b.Code
		c.serve.closeAfter(s.opts.InitRunTime + b.After)
	}
	if c.logPath != "" {
		if err := s.writeLog(c.logPath, now, c.config); err != nil {
			return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to create container log %q: %v", c.logPath, err))
		}
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// runsToCompletion is the MetadataRunsToCompletion the engine sent with a
// CreateContainer ("" for none).
func runsToCompletion(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(MetadataRunsToCompletion); len(v) > 0 {
		return v[0]
	}
	return ""
}

// imageName is the container's image as its pod names it (the kubelet
// sends the image ID as the image and the pod's text as
// user_specified_image), else the image's first repo tag.
func (c *container) imageName() string {
	if n := c.config.GetImage().GetUserSpecifiedImage(); n != "" {
		return n
	}
	if len(c.image.repoTags) > 0 {
		return c.image.repoTags[0]
	}
	return c.config.GetImage().GetImage()
}

// StopContainer implements runtimeapi.RuntimeServiceServer. A running
// container exits at once with 137 (the timeout is accepted but never
// waited for); other states are left unchanged, as in containerd.
func (s *service) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.exit(s.now(), 137, "Error")
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer implements runtimeapi.RuntimeServiceServer. A running
// container is stopped first; removing an unknown ID succeeds, as in
// containerd.
func (s *service) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	id := req.GetContainerId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "container id must be set")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteContainer(id)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ContainerStatus implements runtimeapi.RuntimeServiceServer.
func (s *service) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	// The stored config's messages and maps, not copies, as in
	// ListContainers: the simulator never changes a config once
	// CreateContainer stored it, and an answer is only marshalled (a
	// relist of a pod of 1,000 containers reads each one's status, issue 34).
	cfg := c.config
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    cfg.GetMetadata(),
		State:       c.state,
		CreatedAt:   unixNano(c.createdAt),
		StartedAt:   unixNano(c.startedAt),
		FinishedAt:  unixNano(c.finishedAt),
		ExitCode:    c.exitCode,
		Image:       c.imageSpec(),
		ImageRef:    c.image.ref(),
		ImageId:     c.image.id,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      cfg.GetLabels(),
		Annotations: cfg.GetAnnotations(),
		LogPath:     c.logPath,
		StopSignal:  cfg.GetStopSignal(),
		Mounts:      cfg.GetMounts(),
	}
	if r := cfg.GetLinux().GetResources(); r != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: r}
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// imageSpec is the image a container reports: its image's first repo tag
// (as containerd does), else the reference it was created with.
func (c *container) imageSpec() *runtimeapi.ImageSpec {
	spec := &runtimeapi.ImageSpec{
		Image:              c.config.GetImage().GetImage(),
		UserSpecifiedImage: c.config.GetImage().GetUserSpecifiedImage(),
		Annotations:        c.config.GetImage().GetAnnotations(), // never changed once stored
	}
	if len(c.image.repoTags) > 0 {
		spec.Image = c.image.repoTags[0]
	}
	return spec
}

// ListContainers implements runtimeapi.RuntimeServiceServer, honouring the
// id (prefix), pod_sandbox_id (prefix), state and label_selector filters.
// Results are in creation order.
func (s *service) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range s.sortedContainers() {
		c.refresh(now)
		if !matchID(c.id, f.GetId()) || !matchID(c.sandboxID, f.GetPodSandboxId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != c.state {
			continue
		}
		if !matchLabels(c.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sandboxID,
			// The config's metadata and maps, not copies: the simulator
			// never changes a config once CreateContainer stored it, and
			// an answer is only marshalled (a relist of a pod of 1,000
			// containers copied 1,000 maps ten times a second, issue 34).
			Metadata:    c.config.GetMetadata(),
			Image:       c.imageSpec(),
			ImageRef:    c.image.ref(),
			ImageId:     c.image.id,
			State:       c.state,
			CreatedAt:   unixNano(c.createdAt),
			Labels:      c.config.GetLabels(),
			Annotations: c.config.GetAnnotations(),
		})
	}
	return resp, nil
}
