package steps

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/manifest"
)

// dropDisabledFields mirrors what the API server's dropDisabledPodFields
// (pkg/api/pod/util.go) does to a new pod when a gate is off, so that the
// kubelet never sees the fields: dropContainerRestartRules
// (ContainerRestartRules: the regular containers' restartPolicy and rules,
// an init container's restartPolicy other than Always, every rule) and
// dropDisabledPodLevelResources (PodLevelResources: spec.resources). It
// returns the bundle with a copy of the pod, and says what it dropped, for
// the admit step's warnings. ContainerStopSignals is left to the create
// step, which says the signal is not sent.
func dropDisabledFields(b *manifest.Bundle, g gate.Gates) (*manifest.Bundle, []string) {
	var said []string
	pod := b.Pod
	own := func() {
		if pod == b.Pod {
			pod = b.Pod.DeepCopy()
		}
	}
	if !g.Enabled(gate.ContainerRestartRules) && restartRulesInUse(pod.Spec.InitContainers, pod.Spec.Containers) {
		own()
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if !isSidecar(c) {
				c.RestartPolicy = nil
			}
			c.RestartPolicyRules = nil
		}
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].RestartPolicy = nil
			pod.Spec.Containers[i].RestartPolicyRules = nil
		}
		said = append(said, "the containers' restartPolicy and restartPolicyRules were dropped, as an API server with feature gate "+g.Describe(gate.ContainerRestartRules)+" drops them: the pod's restartPolicy decides every restart")
	}
	if !g.Enabled(gate.PodLevelResources) && pod.Spec.Resources != nil {
		own()
		pod.Spec.Resources = nil
		said = append(said, "spec.resources (pod-level resources) was dropped, as an API server with feature gate "+g.Describe(gate.PodLevelResources)+" drops it")
	}
	if pod == b.Pod {
		return b, nil
	}
	nb := *b
	nb.Pod = pod
	return &nb, said
}

func restartRulesInUse(lists ...[]corev1.Container) bool {
	for _, cs := range lists {
		for i := range cs {
			c := &cs[i]
			if len(c.RestartPolicyRules) > 0 || (c.RestartPolicy != nil && !isSidecar(c)) {
				return true
			}
		}
	}
	return false
}
