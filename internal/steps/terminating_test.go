package steps

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestTerminalPodStopsSandbox: when a sync leaves the pod terminal (an init
// container failed under restartPolicy Never; every container terminated
// for good), the kubelet's SyncTerminatingPod stops the sandbox at once:
// StopPodSandbox is the last call of the step that saw the exit, after its
// ContainerStatus, before any teardown, and the sandbox is NOTREADY. A pod
// that is not terminal keeps its sandbox running.
func TestTerminalPodStopsSandbox(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		phase    corev1.PodPhase
		stopped  bool
	}{
		{"init-fails-never", corev1.PodFailed, true},
		{"job-fails", corev1.PodFailed, true},
		{"completed", corev1.PodSucceeded, true},
		{"onfailure-retries", "", false},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			c := newSim(t)
			e := runAll(t, load(t, repoFile("internal/scenario/data/"+tc.scenario+".yaml")), c, testOptions(t))
			var stops []string
			for _, s := range e.Steps() {
				for i, call := range s.Calls {
					if call.Method != "StopPodSandbox" {
						continue
					}
					stops = append(stops, s.Title)
					if s.Stage == StageTeardown {
						t.Errorf("StopPodSandbox in teardown step %q: runAll does not tear down", s.Title)
					}
					if i != len(s.Calls)-1 || i == 0 || s.Calls[i-1].Method != "ContainerStatus" {
						t.Errorf("step %q calls %v: want StopPodSandbox last, right after the ContainerStatus that saw the exit", s.Title, methods(s.Calls))
					}
					if !strings.Contains(detailsText(s), "SyncTerminatingPod") {
						t.Errorf("step %q details %v do not name SyncTerminatingPod", s.Title, s.Result.Details)
					}
				}
			}
			sbs, err := c.ListPodSandbox(context.Background(), nil)
			if err != nil || len(sbs.Items) != 1 {
				t.Fatalf("ListPodSandbox = %v, %v; want the pod's sandbox", sbs, err)
			}
			state := sbs.Items[0].State
			if !tc.stopped {
				if len(stops) != 0 || state != runtimeapi.PodSandboxState_SANDBOX_READY {
					t.Errorf("pod not terminal: StopPodSandbox in %v, sandbox %s; want none, READY", stops, state)
				}
				return
			}
			if len(stops) != 1 {
				t.Fatalf("StopPodSandbox sent in steps %v, want exactly one step", stops)
			}
			if state != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox %s after the pod turned %s, want SANDBOX_NOTREADY", state, tc.phase)
			}
			if got := e.PodState().Status.Phase; got != tc.phase {
				t.Errorf("phase %s, want %s", got, tc.phase)
			}
		})
	}
}

func detailsText(s Step) string {
	var b strings.Builder
	for _, d := range s.Result.Details {
		b.WriteString(d.Key + ": " + d.Value + "\n")
	}
	return b.String()
}
