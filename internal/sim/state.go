// Sandbox state machine (mirrors containerd's internal/cri/store/sandbox/status.go):
//
//	                 RunPodSandbox
//	                       |
//	                       | name reserved, loopback IP allocated,
//	                       | log_directory created
//	                       v
//	               +---------------+
//	               | SANDBOX_READY |------------------+
//	               +---------------+                  |
//	                       |                          |
//	                       | StopPodSandbox           |
//	                       | (running containers      |
//	                       |  exit 137 "Error")       |
//	                       v                          |
//	             +------------------+                 |
//	   Stop ---->| SANDBOX_NOTREADY |<-- Stop         | RemovePodSandbox
//	 (no-op)     +------------------+  (idempotent)   | (stops first)
//	                       |                          |
//	                       | RemovePodSandbox         |
//	                       | (removes containers,     |
//	                       |  releases the name)      |
//	                       v                          |
//	                    removed <---------------------+
//	              (RemovePodSandbox of an unknown ID is OK)
//
// Container state machine (mirrors containerd's internal/cri/store/container/status.go):
//
//	   CreateContainer
//	          |
//	          v
//	 +-------------------+  StopContainer: no-op (containerd only stops running tasks)
//	 | CONTAINER_CREATED |
//	 +-------------------+
//	          |                    start-error fault:
//	          | StartContainer ------------------------------+
//	          v                                              |
//	 +-------------------+                                   |
//	 | CONTAINER_RUNNING |                                   |
//	 +-------------------+                                   |
//	    |            |                                       |
//	    | process    | StopContainer / StopPodSandbox        |
//	    | exits      | exit 137, reason "Error"              |
//	    | (lazily,   |                                       |
//	    |  InitRunTime after start;                          |
//	    |  exit 0 "Completed", N "Error")                    |
//	    v            v                                       v
//	 +------------------+                   exit 128, reason "StartError"
//	 | CONTAINER_EXITED |<-------------------------------------+
//	 +------------------+
//	          |
//	          | RemoveContainer / RemovePodSandbox
//	          | (a running container is stopped first; unknown IDs are OK)
//	          v
//	       removed
//
// The simulated "process" never runs: whether and when a running container
// exits is decided at StartContainer time (exitAt, exitCode) and applied
// lazily by refresh whenever the container is observed.

package sim

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandbox is one pod sandbox in the simulated runtime.
type sandbox struct {
	id        string
	seq       uint64 // creation order, for deterministic listing
	name      string // reserved name NAME_NAMESPACE_UID_ATTEMPT
	config    *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt time.Time
	ip        string
}

// annotations returns the sandbox config annotations (never nil).
func (sb *sandbox) annotations() map[string]string {
	if sb == nil || sb.config.GetAnnotations() == nil {
		return map[string]string{}
	}
	return sb.config.GetAnnotations()
}

// container is one container in the simulated runtime.
type container struct {
	id        string
	seq       uint64
	name      string // reserved name CONTAINER_POD_NAMESPACE_UID_ATTEMPT
	sandboxID string
	config    *runtimeapi.ContainerConfig
	faults    map[string]string // merged sandbox + container annotations
	image     *image            // image resolved at create time
	logPath   string            // absolute log path, "" if none
	completes string            // MetadataRunsToCompletion sent with its CreateContainer

	state      runtimeapi.ContainerState
	createdAt  time.Time
	startedAt  time.Time
	finishedAt time.Time
	exitCode   int32
	reason     string
	message    string

	// exitAt is when a running container's process exits by itself; the
	// zero time means it keeps running until stopped.
	exitAt     time.Time
	exitAtCode int32

	probePorts []int    // MetadataProbePorts sent with its CreateContainer
	serve      *serving // its network endpoints while it runs (listen.go)
}

// refresh applies a scheduled process exit if it is due at now.
func (c *container) refresh(now time.Time) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.exitAt.IsZero() || now.Before(c.exitAt) {
		return
	}
	c.exit(c.exitAt, c.exitAtCode, "")
}

// exit moves the container to EXITED with the given code.
func (c *container) exit(at time.Time, code int32, reason string) {
	if reason == "" {
		reason = exitReason(code)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = at
	c.exitCode = code
	c.reason = reason
	c.exitAt = time.Time{}
	c.serve.close()
}

// exitReason is the reason containerd reports for a process exit code.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

// unixNano returns t in nanoseconds, or 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
