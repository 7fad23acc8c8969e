package sim

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync implements runtimeapi.RuntimeServiceServer. The command is not
// run: the result is what it echoes (as for the container's log) and exit
// code 0, unless the exec-exit-code / exec-stderr faults for the container
// say otherwise.
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
	// What the command echoes, as the container's own command is logged
	// (echoLines), with the container's environment.
	var stdout, stderr strings.Builder
	for _, l := range echoLines(req.GetCmd(), envMap(c.config)) {
		if l.stream == "stderr" {
			stderr.WriteString(l.text + "\n")
		} else {
			stdout.WriteString(l.text + "\n")
		}
	}
	resp := &runtimeapi.ExecSyncResponse{Stdout: []byte(stdout.String())}
	if stderr.Len() > 0 {
		resp.Stderr = []byte(stderr.String())
	}
	if code, ok := intFault(c.faults, AnnotationExecExitCode, name); ok {
		resp.ExitCode = code
	}
	if msg, ok := containerFault(c.faults, AnnotationExecStderr, name); ok {
		resp.Stderr = []byte(msg)
	}
	return resp, nil
}
