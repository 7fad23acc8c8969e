package podstate

import (
	corev1 "k8s.io/api/core/v1"
)

// qosClass is the pod's QoS class (Guaranteed, Burstable, BestEffort) as the
// API server computes it: every container's cpu and memory limits equal to
// requests makes it Guaranteed; no requests or limits at all, BestEffort.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	any, guaranteed := false, true
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				any = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
