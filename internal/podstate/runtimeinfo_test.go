package podstate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
)

// TestRuntimeStatus checks what convertToAPIContainerStatuses copies from
// ContainerStatus: the user always (SupplementalGroupsPolicy is GA), the
// stop signal only with ContainerStopSignals on, and nothing a runtime
// does not report (containerd 1.6).
func TestRuntimeStatus(t *testing.T) {
	on, _ := gate.Parse("ContainerStopSignals=true")
	cs := &runtimeapi.ContainerStatus{
		User:       &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 1000, SupplementalGroups: []int64{1000, 4000}}},
		StopSignal: runtimeapi.Signal_SIGNAL_SIGUSR1,
	}
	for _, tc := range []struct {
		name   string
		g      gate.Gates
		cs     *runtimeapi.ContainerStatus
		groups []int64
		signal string
	}{
		{"gate on", on, cs, []int64{1000, 4000}, "SIGUSR1"},
		{"gate off", gate.Gates{}, cs, []int64{1000, 4000}, ""},
		{"1.6 reports neither", on, &runtimeapi.ContainerStatus{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
			tr := New(pod, nil)
			tr.SetGates(tc.g)
			tr.RuntimeStatus("app", tc.cs)
			st := tr.Snapshot().Status.ContainerStatuses[0]
			var groups []int64
			if st.User != nil {
				groups = st.User.Linux.SupplementalGroups
			}
			if len(groups) != len(tc.groups) {
				t.Errorf("user groups = %v, want %v", groups, tc.groups)
			}
			var sig string
			if st.StopSignal != nil {
				sig = string(*st.StopSignal)
			}
			if sig != tc.signal {
				t.Errorf("stopSignal = %q, want %q", sig, tc.signal)
			}
		})
	}
}
