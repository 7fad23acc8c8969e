package podstate

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podcfg"
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
