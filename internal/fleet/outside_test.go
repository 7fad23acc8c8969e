package fleet

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// TestStoppedFromOutside reads real runs the kubelet stopped (testdata/
// outside-*.json: podstep run -o json on the project cluster's kubelet
// runtimes, trimmed of requests and pod states) and real --sim runs that
// failed on their own.
func TestStoppedFromOutside(t *testing.T) {
	call := func(method, errText string, resp any) report.CallJSON {
		c := report.CallJSON{Method: method, Error: errText, Code: "OK"}
		if errText != "" {
			c.Code = "Unknown"
		}
		if resp != nil {
			c.Response, _ = json.Marshal(resp)
		}
		return c
	}
	exited := func(code int, reason string) any {
		return map[string]any{"status": map[string]any{"metadata": map[string]any{"name": "hello"},
			"state": "CONTAINER_EXITED", "exit_code": code, "reason": reason}}
	}
	failed := func(stage steps.Stage, name string, calls ...report.CallJSON) *Result {
		return &Result{Node: "n", Status: Ran, ExitCode: 1, Steps: []report.StepJSON{
			{Stage: stage, Name: name, State: steps.Failed, Reason: "X", Calls: calls}}}
	}
	for _, tc := range []struct {
		name string
		r    *Result
		want string // "" : no evidence
	}{
		{"containerd 2: SIGKILL seen by the relist", load(t, "outside-sigkill-2"), `containers/relist: ContainerStatus: container "hello" exited with code 137 (SIGKILL) before podstep stopped it`},
		{"containerd 1.6: the sandbox's namespaces gone at start", load(t, "outside-netns-gone-16"), "containers/start/hello: StartContainer: namespace path: lstat /proc/ … no such file or directory"},
		{"ttrpc: closed in teardown (KillPodSandboxError)", failed(steps.StageTeardown, "stop-sandbox",
			call("StopPodSandbox", "failed to stop sandbox: ttrpc: closed", nil)), "teardown/stop-sandbox: StopPodSandbox: ttrpc: closed"},
		{"sandbox NOTREADY", failed(steps.StageContainers, "relist",
			call("PodSandboxStatus", "", map[string]any{"status": map[string]any{"state": "SANDBOX_NOTREADY"}})), "containers/relist: PodSandboxStatus: the sandbox was NOTREADY before podstep stopped it"},
		{"OOMKilled is the container's own", failed(steps.StageContainers, "relist", call("ContainerStatus", "", exited(137, "OOMKilled"))), ""},
		{"exit 1 is the container's own", failed(steps.StageContainers, "relist", call("ContainerStatus", "", exited(1, "Error"))), ""},
		{"137 after podstep's own StopContainer", failed(steps.StageTeardown, "stop-containers",
			call("StopContainer", "", nil), call("ContainerStatus", "", exited(137, "Error"))), ""},
		{"a run that did not fail", &Result{Status: Ran, Steps: []report.StepJSON{{Calls: []report.CallJSON{call("StartContainer", "ttrpc: closed", nil)}}}}, ""},
		{"not started", &Result{Status: NotStarted, ExitCode: 3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StoppedFromOutside(tc.r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// real --sim runs that failed (or not) on their own
	for _, n := range []string{"node-a", "node-b", "node-c", "node-d", "node-e", "node-f"} {
		if got := StoppedFromOutside(load(t, n)); got != "" {
			t.Errorf("%s: %q, want none", n, got)
		}
	}
}

// The table and the progress say it, and keep the real reason.
func TestStoppedFromOutsideText(t *testing.T) {
	r := load(t, "outside-netns-gone-16")
	r.Endpoint, r.EndpointFrom = "unix:///run/containerd/containerd.sock", FromConfigz
	r.StoppedFromOutside = StoppedFromOutside(r)
	var b strings.Builder
	if err := WriteText(&b, []*Result{r}, Analyze([]*Result{r})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RunContainerError (stopped from outside)", StoppedHint,
		"unix:///run/containerd/containerd.sock (configz)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
