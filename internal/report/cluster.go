package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"
)

// ClusterView is what the cluster says about the real pod that podstep
// replayed (podstep run --pod): its phase, container states and the Events
// the real kubelet (and the scheduler) posted, read from the API server at
// the end of the run, beside podstep's own view in the Summary. Every text
// in it came from the API server and has no control characters.
type ClusterView struct {
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
	Containers []ClusterContainer `json:"containers,omitempty"`
	// Events are the pod's Events (fieldSelector involvedObject.uid), oldest first.
	Events []ClusterEvent `json:"events"`
	// Error says why the view could not be read ("" when it was).
	Error string `json:"error,omitempty"`
	// Notes say how podstep's pod relates to the kubelet's.
	Notes []string `json:"notes,omitempty"`
}

// ClusterContainer is one container status as the API server has it.
type ClusterContainer struct {
	Name     string `json:"name"`
	Init     bool   `json:"init,omitempty"`
	State    string `json:"state"` // waiting, running, terminated, or "" (no status yet)
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	ExitCode *int32 `json:"exit_code,omitempty"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
}

// ClusterEvent is one Event of the pod.
type ClusterEvent struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Source is the component (and host) that posted it, e.g. "kubelet node-a".
	Source string `json:"source"`
	Count  int32  `json:"count"`
	// Last is when it was last seen (RFC 3339).
	Last string `json:"last,omitempty"`
}

// WriteClusterText prints the cluster's view as a section after the run's
// summary line.
func WriteClusterText(w io.Writer, v *ClusterView) {
	var sb strings.Builder
	writeCluster(&sb, v)
	_, _ = io.WriteString(w, sb.String())
}

func writeCluster(w *strings.Builder, v *ClusterView) {
	head := color.New(color.Bold)
	w.WriteString(head.Sprintf("cluster's view of pod/%s", v.Pod))
	fmt.Fprintf(w, " (API server %s", v.Server)
	if v.ResourceVersion != "" {
		fmt.Fprintf(w, ", resourceVersion %s", v.ResourceVersion)
	}
	fmt.Fprintln(w, ")")
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if v.Error != "" {
		fmt.Fprintf(w, "  could not read it: %s\n", v.Error)
		return
	}
	st := v.Phase
	if v.Reason != "" {
		st += " (" + v.Reason + ")"
	}
	fmt.Fprintf(w, "  phase %s  node %s  uid %s\n", st, orNone(v.Node), v.UID)
	if v.Message != "" {
		fmt.Fprintf(w, "  message: %s\n", v.Message)
	}
	for _, c := range v.Containers {
		fmt.Fprintf(w, "  %s\n", ContainerLine(c))
	}
	if len(v.Events) == 0 {
		fmt.Fprintln(w, "  events: none")
		return
	}
	fmt.Fprintf(w, "  %-8s %-22s %-28s %s\n", "TYPE", "REASON", "FROM", "MESSAGE")
	for _, e := range v.Events {
		msg := e.Message
		if e.Count > 1 {
			msg += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(w, "  %-8s %-22s %-28s %s\n", e.Type, e.Reason, e.Source, strings.TrimSpace(msg))
	}
}

// ContainerLine is one container status in one line, as the text report
// and the TUI's cluster pane say it: "container app: waiting
// (CrashLoopBackOff) exit code 1, ready false, restarts 3: MESSAGE" (the
// state, reason, exit code and message as far as the status has them).
func ContainerLine(c ClusterContainer) string {
	kind := "container"
	if c.Init {
		kind = "init container"
	}
	state := orNone(c.State)
	if c.Reason != "" {
		state += " (" + c.Reason + ")"
	}
	if c.ExitCode != nil {
		state += fmt.Sprintf(" exit code %d", *c.ExitCode)
	}
	s := fmt.Sprintf("%s %s: %s, ready %v, restarts %d", kind, c.Name, state, c.Ready, c.Restarts)
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
