package steps

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stopTerminalPod does what the pod worker does once a sync leaves the pod
// terminal (phase Succeeded or Failed, e.g. an init container failed under
// restartPolicy Never): SyncPod reports isTerminal and the worker runs
// SyncTerminatingPod (pkg/kubelet/kubelet.go) at once, whose killPod → KillPod
// → killPodWithSyncResult (kuberuntime_manager.go) stops the running containers
// (none: they all exited) and every sandbox of the pod with StopPodSandbox,
// before any teardown; removal waits for the garbage collector (teardown).
// It returns the detail to show; nothing is sent for a pod that is not
// terminal or has no sandbox.
func (e *Engine) stopTerminalPod(ctx context.Context) []Detail {
	phase := e.tracker.Snapshot().Status.Phase
	if (phase != corev1.PodSucceeded && phase != corev1.PodFailed) || e.rt.sandboxID == "" {
		return nil
	}
	if _, err := e.client.StopPodSandbox(ctx, e.rt.sandboxID); err != nil {
		// The kubelet records FailedToKillPod and retries on its next sync;
		// podstep's teardown stops the sandbox again.
		return []Detail{kv("sandbox", fmt.Sprintf("the pod is %s: StopPodSandbox failed: %v", phase, err))}
	}
	e.tracker.SandboxGone()
	return []Detail{kv("sandbox", fmt.Sprintf("stopped: the pod is %s, so SyncTerminatingPod stops its sandbox at once (killPod → killPodWithSyncResult)", phase))}
}

// terminalStopRequest is the conditional StopPodSandbox a step shows among
// its requests when its outcome can make the pod terminal.
func (e *Engine) terminalStopRequest(when string) Request {
	return Request{Method: "StopPodSandbox", Message: &runtimeapi.StopPodSandboxRequest{PodSandboxId: e.placeholderSandbox()},
		Note: "only " + when + ": SyncTerminatingPod stops the sandbox"}
}
