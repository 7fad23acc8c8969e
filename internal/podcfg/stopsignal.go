package podcfg

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
)

// StopSignal mirrors kuberuntime/helpers.go getContainerConfigStopSignal,
// which generateContainerConfig (kuberuntime_container.go) sends as
// ContainerConfig.stop_signal (KEP-4960): with ContainerStopSignals on, the
// container's lifecycle.stopSignal as the CRI enum ("SIGRTMIN+1" is
// SIGNAL_SIGRTMINPLUS1), else nothing (RUNTIME_DEFAULT: the runtime uses
// the image's STOPSIGNAL, else SIGTERM). set says the container asks for a
// signal, whatever the gate.
func StopSignal(c *corev1.Container, g gate.Gates) (sig runtimeapi.Signal, set bool) {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, false
	}
	if !g.Enabled(gate.ContainerStopSignals) {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, true
	}
	return signalEnum(*c.Lifecycle.StopSignal), true
}

// signalEnum is the kubelet's signalNameToRuntimeEnum lookup: an unknown
// name is RUNTIME_DEFAULT (validation refuses it first).
func signalEnum(s corev1.Signal) runtimeapi.Signal {
	name := strings.NewReplacer("+", "PLUS", "-", "MINUS").Replace(string(s))
	return runtimeapi.Signal(runtimeapi.Signal_value["SIGNAL_"+name])
}

// SignalName is the signal's name as the pod spec writes it
// ("SIGRTMIN+1"), the kubelet's runtimeSignalToString; "" for RUNTIME_DEFAULT.
func SignalName(s runtimeapi.Signal) string {
	if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return ""
	}
	name := strings.TrimPrefix(s.String(), "SIGNAL_")
	return strings.NewReplacer("PLUS", "+", "MINUS", "-").Replace(name)
}
