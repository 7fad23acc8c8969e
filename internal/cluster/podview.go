package cluster

import "github.com/podstep/podstep/internal/render"

// PodView is what the cluster says about the real pod that podstep
// replayed (podstep run --pod): its phase, container states and the Events
// the real kubelet (and the scheduler) posted, read from the API server at
// the end of the run, beside podstep's own view in the Summary. Every text
// in it came from the API server and has no control characters.
type PodView struct {
	// Server is the API server's URL.
	Server string `json:"server"`
	// Pod is "namespace/name"; UID the cluster's, ReplayUID podstep's own.
	Pod       string `json:"pod"`
	UID       string `json:"uid"`
	ReplayUID string `json:"replay_uid,omitempty"`
	// ResourceVersion is the pod's when it was read.
	ResourceVersion string `json:"resource_version,omitempty"`
	Node            string `json:"node,omitempty"`
	Phase           string `json:"phase"`
	Reason          string `json:"reason,omitempty"`
	Message         string `json:"message,omitempty"`
	// Containers are the cluster's container statuses, init containers first.
	Containers []ContainerStatus `json:"containers,omitempty"`
	// Events are the pod's Events (fieldSelector involvedObject.uid), oldest first.
	Events []Event `json:"events"`
	// Error says why the view could not be read ("" when it was).
	Error string `json:"error,omitempty"`
	// Notes say how podstep's pod relates to the kubelet's.
	Notes []string `json:"notes,omitempty"`
}

// ContainerStatus is one container status as the API server has it.
type ContainerStatus struct {
	Name     string `json:"name"`
	Init     bool   `json:"init,omitempty"`
	State    string `json:"state"` // waiting, running, terminated, or "" (no status yet)
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode *int32 `json:"exit_code,omitempty"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
}

// Event is one Event of the pod.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Source is the component (and host) that posted it, e.g. "kubelet node-a".
	Source string `json:"source"`
	Count  int32  `json:"count"`
	// Last is when it was last seen (RFC 3339).
	Last string `json:"last,omitempty"`
}

// Line is the container status in one line (render.ContainerLine).
func (c ContainerStatus) Line() string { return render.ContainerLine(render.ContainerState(c)) }
