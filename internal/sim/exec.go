package sim

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync implements runtimeapi.RuntimeServiceServer. The command is not
// run: the result is empty stdout and exit code 0, unless the
// exec-exit-code / exec-stderr faults for the container say otherwise.
// Exec in a container that is not running fails as in containerd.
func (s *service) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "cmd must be set")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to exec in container: container is in %s state", c.state))
	}
	name := c.config.GetMetadata().GetName()
	resp := &runtimeapi.ExecSyncResponse{Stdout: []byte{}}
	if code, ok := intFault(c.faults, AnnotationExecExitCode, name); ok {
		resp.ExitCode = code
	}
	if msg, ok := containerFault(c.faults, AnnotationExecStderr, name); ok {
		resp.Stderr = []byte(msg)
	}
	return resp, nil
}
