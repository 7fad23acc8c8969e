package podcfg

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
)

// TestStopSignal checks getContainerConfigStopSignal's mapping and its gate:
// off (v1.37's default) sends nothing but says a signal was asked for.
func TestStopSignal(t *testing.T) {
	on, err := gate.Parse("ContainerStopSignals=true")
	if err != nil {
		t.Fatal(err)
	}
	withSignal := func(s corev1.Signal) *corev1.Container {
		return &corev1.Container{Lifecycle: &corev1.Lifecycle{StopSignal: &s}}
	}
	for _, tc := range []struct {
		name string
		c    *corev1.Container
		g    gate.Gates
		want runtimeapi.Signal
		set  bool
	}{
		{"none", &corev1.Container{}, on, runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, false},
		{"SIGUSR1", withSignal("SIGUSR1"), on, runtimeapi.Signal_SIGNAL_SIGUSR1, true},
		{"SIGRTMIN+1", withSignal("SIGRTMIN+1"), on, runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1, true},
		{"SIGRTMAX-14", withSignal("SIGRTMAX-14"), on, runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14, true},
		{"gate off", withSignal("SIGUSR1"), gate.Gates{}, runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, set := StopSignal(tc.c, tc.g)
			if got != tc.want || set != tc.set {
				t.Errorf("StopSignal = %v, %v; want %v, %v", got, set, tc.want, tc.set)
			}
			if tc.set && tc.g.Enabled(gate.ContainerStopSignals) {
				if back := SignalName(got); back != string(*tc.c.Lifecycle.StopSignal) {
					t.Errorf("SignalName(%v) = %q, want %q", got, back, *tc.c.Lifecycle.StopSignal)
				}
			}
		})
	}
	if SignalName(runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT) != "" {
		t.Error("RUNTIME_DEFAULT has no name")
	}
}

// TestProcMountMasks checks ConvertToRuntimeMaskedPaths/ReadonlyPaths as
// determineEffectiveSecurityContext applies them: the default masks unless
// procMount is Unmasked, then none (empty, not absent).
func TestProcMountMasks(t *testing.T) {
	pod := &corev1.Pod{}
	ns := &runtimeapi.NamespaceOption{}
	for _, tc := range []struct {
		pm           *corev1.ProcMountType
		masked, read int
	}{
		{nil, len(defaultMaskedPaths(nil)), len(defaultReadonlyPaths)},
		{ptr(corev1.DefaultProcMount), len(defaultMaskedPaths(nil)), len(defaultReadonlyPaths)},
		{ptr(corev1.UnmaskedProcMount), 0, 0},
	} {
		c := &corev1.Container{Name: "c", SecurityContext: &corev1.SecurityContext{ProcMount: tc.pm}}
		sc, err := containerSecurityContext(pod, c, nil, "", ns, "/var/lib/kubelet", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.MaskedPaths) != tc.masked || len(sc.ReadonlyPaths) != tc.read || sc.MaskedPaths == nil || sc.ReadonlyPaths == nil {
			t.Errorf("procMount %v: masked %v, readonly %v", tc.pm, sc.MaskedPaths, sc.ReadonlyPaths)
		}
	}
}

func ptr[T any](v T) *T { return &v }
