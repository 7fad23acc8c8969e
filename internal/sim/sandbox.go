package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/fsperm"
)

// makeSandboxName is containerd's reserved sandbox name.
func makeSandboxName(md *runtimeapi.PodSandboxMetadata) string {
	return strings.Join([]string{md.GetName(), md.GetNamespace(), md.GetUid(), fmt.Sprint(md.GetAttempt())}, "_")
}

// newID returns a 64-hex-digit ID derived from parts and the per-server
// counter. Callers hold s.mu.
func (s *service) newID(parts ...string) (string, uint64) {
	s.seq++
	sum := sha256.Sum256([]byte(strings.Join(parts, "/") + "/" + fmt.Sprint(s.seq)))
	return hex.EncodeToString(sum[:]), s.seq
}

// sortedSandboxes returns the sandboxes in creation order. Callers hold s.mu.
func (s *service) sortedSandboxes() []*sandbox {
	out := make([]*sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		out = append(out, sb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// sandboxNotFound is containerd's error for an unknown sandbox ID.
func sandboxNotFound(id string) error {
	return status.Error(codes.NotFound, fmt.Sprintf("an error occurred when try to find sandbox %q: not found", id))
}

// getSandbox returns the sandbox with the given ID: InvalidArgument for an
// empty ID, NotFound for an unknown one (missing=true) or nil with no error
// (missing=false, for calls that succeed on unknown IDs). Callers hold s.mu.
func (s *service) getSandbox(id string, missingIsError bool) (*sandbox, error) {
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox id must be set")
	}
	sb := s.sandboxes[id]
	if sb == nil && missingIsError {
		return nil, sandboxNotFound(id)
	}
	return sb, nil
}

// hostNetwork reports whether the sandbox uses the node's network namespace.
func hostNetwork(cfg *runtimeapi.PodSandboxConfig) bool {
	return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
}

// RunPodSandbox implements runtimeapi.RuntimeServiceServer.
func (s *service) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil {
		return nil, status.Error(codes.InvalidArgument, "sandbox config must include metadata")
	}
	if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox metadata must include name, namespace and uid")
	}
	if !knownHandler(req.GetRuntimeHandler()) {
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to get sandbox runtime: no runtime for %q is configured", req.GetRuntimeHandler()))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	name := makeSandboxName(md)
	if other, ok := s.sandboxNames[name]; ok {
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to reserve sandbox name %q: name %q is reserved for %q", name, name, other))
	}
	ann := cfg.GetAnnotations()
	s.markMissing(ann)
	if msg, ok := ann[AnnotationSandboxError]; ok {
		return nil, faultError(msg)
	}
	if dir := cfg.GetLogDirectory(); dir != "" {
		p, err := s.confine("log_directory", dir)
		if err != nil {
			return nil, err
		}
		if err := fsperm.MkdirBeneath(p.root, p.rel, 0o755); err != nil {
			return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to create log directory %q: %v", dir, err))
		}
	}
	id, seq := s.newID(md.GetName(), md.GetNamespace(), md.GetUid(), fmt.Sprint(md.GetAttempt()))
	sb := &sandbox{
		id:        id,
		seq:       seq,
		name:      name,
		config:    proto.Clone(cfg).(*runtimeapi.PodSandboxConfig),
		handler:   req.GetRuntimeHandler(),
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: s.now(),
	}
	if !hostNetwork(cfg) {
		sb.ip = allocLoopback(name)
	}
	s.sandboxes[id] = sb
	s.sandboxNames[name] = id
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// stopSandbox stops the sandbox's running containers (exit 137) and marks
// it NOTREADY. Callers hold s.mu.
func (s *service) stopSandbox(sb *sandbox) {
	now := s.now()
	for _, c := range s.sortedContainers() {
		if c.sandboxID != sb.id {
			continue
		}
		c.refresh(now)
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.exit(now, 137, "Error")
		}
	}
	sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

// StopPodSandbox implements runtimeapi.RuntimeServiceServer. Stopping a
// stopped sandbox is a no-op; an unknown ID is NotFound, as in containerd.
func (s *service) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId(), true)
	if err != nil {
		return nil, err
	}
	s.stopSandbox(sb)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox implements runtimeapi.RuntimeServiceServer. A ready
// sandbox is stopped first; its containers are removed and its name is
// released. Removing an unknown ID succeeds, as in containerd.
func (s *service) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	id := req.GetPodSandboxId()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(id, false)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	s.stopSandbox(sb)
	for cid, c := range s.containers {
		if c.sandboxID == id {
			s.deleteContainer(cid)
		}
	}
	delete(s.sandboxes, id)
	delete(s.sandboxNames, sb.name)
	releaseLoopback(sb.ip)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus implements runtimeapi.RuntimeServiceServer.
func (s *service) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId(), true)
	if err != nil {
		return nil, err
	}
	cfg := sb.config
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       proto.Clone(cfg.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
		State:          sb.state,
		CreatedAt:      unixNano(sb.createdAt),
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         cloneMap(cfg.GetLabels()),
		Annotations:    cloneMap(cfg.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns != nil {
		st.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: proto.Clone(ns).(*runtimeapi.NamespaceOption),
		}}
	} else {
		st.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: &runtimeapi.NamespaceOption{},
		}}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st, Timestamp: s.now().UnixNano()}, nil
}

// ListPodSandbox implements runtimeapi.RuntimeServiceServer, honouring the
// id (prefix), state and label_selector filters. Results are in creation
// order.
func (s *service) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, sb := range s.sortedSandboxes() {
		if !matchID(sb.id, f.GetId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != sb.state {
			continue
		}
		if !matchLabels(sb.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
			State:          sb.state,
			CreatedAt:      unixNano(sb.createdAt),
			Labels:         cloneMap(sb.config.GetLabels()),
			Annotations:    cloneMap(sb.config.GetAnnotations()),
			RuntimeHandler: sb.handler,
		})
	}
	return resp, nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
