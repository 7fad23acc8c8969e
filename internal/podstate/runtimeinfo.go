package podstate

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
)

// RuntimeStatus copies what convertToAPIContainerStatuses
// (pkg/kubelet/kubelet_pods.go) takes from the runtime's ContainerStatus into
// the container's status: user (toKubeContainerUser,
// kuberuntime_container_linux.go: the uid, gid and supplemental groups the
// process really has; SupplementalGroupsPolicy, GA in v1.37) and stopSignal
// (ContainerStopSignals on only; a runtime that does not report one,
// RUNTIME_DEFAULT, leaves it unset). containerd 1.6 reports neither.
func (t *Tracker) RuntimeStatus(name string, cs *runtimeapi.ContainerStatus) {
	if cs == nil {
		return
	}
	t.mu.Lock()
	g := t.gates
	t.mu.Unlock()
	t.update(name, func(s *corev1.ContainerStatus) {
		if l := cs.GetUser().GetLinux(); l != nil && g.Enabled(gate.SupplementalGroupsPolicy) {
			s.User = &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: l.Uid, GID: l.Gid, SupplementalGroups: l.SupplementalGroups}}
		}
		if sig := cs.GetStopSignal(); sig != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT && g.Enabled(gate.ContainerStopSignals) {
			name := corev1.Signal(podcfg.SignalName(sig))
			s.StopSignal = &name
		}
	})
}

// resetMessage is the kubelet's message for a container RestartAllContainers
// removed (convertToAPIContainerStatuses, pkg/kubelet/kubelet_pods.go).
const resetMessage = "The container is removed because RestartAllContainers in place"

// ResetAll records that RestartAllContainers removed the named containers:
// as convertToAPIContainerStatuses shows a container missing while the pod
// restarts in place, each (unless already waiting) is Waiting with reason
// RestartingAllContainers, its last termination state says the same with
// exit code 137, and its restart count goes up by one. Every container is
// gone, so the AllContainersRestarting condition turns False
// (AllContainersRestartCleanedUp).
func (t *Tracker) ResetAll(names []string) {
	for _, n := range names {
		t.update(n, func(s *corev1.ContainerStatus) {
			if s.State.Waiting != nil {
				return
			}
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason.RestartingAllContainers, Message: resetMessage}}
			s.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason.RestartingAllContainers, Message: resetMessage, ExitCode: 137}}
			s.RestartCount++
			s.Ready = false
			f := false
			s.Started = &f
			s.ContainerID = ""
		})
	}
	t.mu.Lock()
	t.restartingAll = false
	t.mu.Unlock()
}
