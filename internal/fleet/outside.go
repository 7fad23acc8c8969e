package fleet

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/podstep/podstep/internal/report"
)

// StoppedHint is what the fleet says of a node whose replay was stopped
// from outside: the v1.37 kubelet's housekeeping (HandlePodCleanups,
// pkg/kubelet/kubelet_pods.go, every 2 s) lists every sandbox on its
// runtime and kills, with a 1 s grace period, the pods no pod worker
// knows ("Clean up containers for orphaned pod we had not seen before").
const StoppedHint = "stopped from outside: on a node whose kubelet uses this runtime, " +
	"the kubelet's HandlePodCleanups stops pods it does not know"

// goneSandbox are fragments of containerd's errors that say the pod's
// sandbox (its pause process, task or shim) went away under a call, as
// seen on the project's cluster when the kubelet killed podstep's pod
// between two steps (testdata/outside-*.json).
// Each entry's parts must all be in the error.
var goneSandbox = [][]string{
	{"ttrpc: closed"},                                             // the shim's connection closed under the call
	{"sandbox container", "is not running"},                       // CreateContainer/StartContainer
	{"sandbox container task", "no running task found"},           // CreateContainer
	{"failed to load sandbox task"},                               // containerd 2: the sandbox's shim is gone
	{"can't find shim for sandbox"},                               // containerd 2, likewise
	{"namespace path: lstat /proc/", "no such file or directory"}, // runc: the pause process's namespaces are gone
}

func matchAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// StoppedFromOutside looks in a failed run's steps for evidence that
// something other than podstep stopped the replayed pod: a call error
// saying the sandbox went away, a container that exited with 137
// (SIGKILL, not OOMKilled) or a NOTREADY sandbox before podstep itself
// stopped anything. It returns the evidence ("" when none, or when the
// run did not fail).
func StoppedFromOutside(r *Result) string {
	if r.Status != Ran || (r.Failure() == nil && r.ExitCode == 0) {
		return ""
	}
	stopped := false // podstep stopped or removed something itself
	for _, s := range r.Steps {
		for _, c := range s.Calls {
			at := fmt.Sprintf("%s/%s: %s", s.Stage, s.Name, c.Method)
			for _, parts := range goneSandbox {
				if matchAll(c.Error, parts) {
					return Clean(at + ": " + strings.Join(parts, " … "))
				}
			}
			if !stopped {
				if e := killedStatus(c); e != "" {
					return Clean(at + ": " + e)
				}
			}
			switch c.Method {
			case "StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox":
				stopped = true
			}
		}
	}
	return ""
}

// killedStatus reads a ContainerStatus or PodSandboxStatus answer: a
// container killed by SIGKILL, or a sandbox not ready.
func killedStatus(c report.CallJSON) string {
	if len(c.Response) == 0 {
		return ""
	}
	var st struct {
		Status struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			State    string `json:"state"`
			ExitCode int32  `json:"exit_code"`
			Reason   string `json:"reason"`
		} `json:"status"`
	}
	switch c.Method {
	case "ContainerStatus":
		if json.Unmarshal(c.Response, &st) == nil && st.Status.State == "CONTAINER_EXITED" &&
			st.Status.ExitCode == 137 && st.Status.Reason != "OOMKilled" {
			return fmt.Sprintf("container %q exited with code 137 (SIGKILL) before podstep stopped it", st.Status.Metadata.Name)
		}
	case "PodSandboxStatus":
		if json.Unmarshal(c.Response, &st) == nil && st.Status.State == "SANDBOX_NOTREADY" {
			return "the sandbox was NOTREADY before podstep stopped it"
		}
	}
	return ""
}
