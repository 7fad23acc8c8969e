package podcfg

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// QOSClass returns the pod's QoS class like pkg/apis/core/v1/helper/qos
// GetPodQOS: status.qosClass when set, otherwise computed from the cpu/memory
// requests and limits of all (init and regular) containers, or from the
// pod-level resources when spec.resources is set (PodLevelResources).
// Requests missing where a limit is given count as equal to the limit, as
// after API defaulting.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(dst corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if cur, ok := dst[name]; ok {
			q = q.DeepCopy()
			q.Add(cur)
		}
		dst[name] = q
	}
	consider := func(req, lim corev1.ResourceList) {
		req = defaultRequests(req, lim)
		for name, q := range req {
			if isQOSResource(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		found := map[corev1.ResourceName]bool{}
		for name, q := range lim {
			if isQOSResource(name) && q.Sign() > 0 {
				found[name] = true
				add(limits, name, q)
			}
		}
		if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
			guaranteed = false
		}
	}
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		consider(pod.Spec.Resources.Requests, pod.Spec.Resources.Limits)
	} else {
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			consider(c.Resources.Requests, c.Resources.Limits)
		}
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			consider(c.Resources.Requests, c.Resources.Limits)
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func isQOSResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// defaultRequests returns req with every resource that has a limit but no
// request set to the limit (the API server's SetDefaults_Container rule).
func defaultRequests(req, lim corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range lim {
		if _, ok := req[name]; ok {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
			for k, v := range req {
				out[k] = v
			}
		}
		out[name] = q.DeepCopy()
	}
	if out == nil {
		return req
	}
	return out
}

// oomScoreAdj mirrors pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust
// (KubeletOOMScoreAdjTieBreak off, its default): node-critical and Guaranteed
// pods get -997, BestEffort 1000, Burstable 1000 - 1000*memRequest/capacity
// clamped to [3, 999], sidecars no higher than the lowest regular container.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, capacity int64, qos corev1.PodQOSClass) int64 {
	if pod.Spec.PriorityClassName == "system-node-critical" {
		return guaranteedOOMScoreAdj
	}
	if qos == "" {
		qos = QOSClass(pod)
	}
	switch qos {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if capacity <= 0 {
		capacity = 1
	}
	memReq := memRequest(c)
	var extra int64
	if podLevelRequestsSet(pod) {
		extra = remainingPodMemPerContainer(pod)
	}
	adj := 1000 - (1000*(memReq+extra))/capacity
	if isSidecar(pod, c) {
		minReq := int64(-1)
		for i := range pod.Spec.Containers {
			if r := memRequest(&pod.Spec.Containers[i]); minReq < 0 || r < minReq {
				minReq = r
			}
		}
		if minReq < 0 {
			minReq = 0
		}
		minAdj := 1000 - (1000*(minReq+extra))/capacity
		if adj > minAdj {
			adj = minAdj
		}
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

func memRequest(c *corev1.Container) int64 {
	req := defaultRequests(c.Resources.Requests, c.Resources.Limits)
	if q, ok := req[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}

func podLevelRequestsSet(pod *corev1.Pod) bool {
	return resourcehelper.IsPodLevelRequestsSet(pod)
}

// remainingPodMemPerContainer mirrors pkg/kubelet/qos/helpers.go
// remainingPodMemReqPerContainer (v1.37): the pod-level memory request less
// the containers' aggregated requests (AggregateContainerRequests: init
// containers and sidecars counted as the scheduler counts them), at least
// 0, shared equally among all containers, init containers included.
func remainingPodMemPerContainer(pod *corev1.Pod) int64 {
	q, ok := pod.Spec.Resources.Requests[corev1.ResourceMemory]
	if !ok || q.IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	aggr := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	rest := max(q.Value()-aggr.Memory().Value(), 0)
	return rest / n
}

func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}
