package manifest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// defaultPodLevelResources mirrors DefaultPodLevelResources
// (pkg/api/pod/util.go, v1.37), which the API server runs when it creates a
// pod with pod-level resources (PodLevelResources and
// PodLevelResourcesFixDefaulting, both beta and on in v1.37), after the
// containers' own defaults:
//  1. pod-level hugepage limits from the containers' aggregated limits;
//  2. pod-level cpu/memory requests from the containers' aggregated
//     requests, then any request still missing from the pod-level limit;
//  3. a pod-level limit missing for a requested resource becomes
//     max(pod-level request, the containers' aggregated limits) when every
//     container has a limit for it.
func defaultPodLevelResources(s *corev1.PodSpec) {
	r := s.Resources
	if r == nil || len(r.Requests)+len(r.Limits) == 0 {
		return
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: s.Containers, InitContainers: s.InitContainers}}
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	// 1. defaultHugePagePodLevelLimits
	for k, v := range resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{}) {
		if !strings.HasPrefix(string(k), corev1.ResourceHugePagesPrefix) {
			continue
		}
		if _, ok := r.Requests[k]; ok {
			continue
		}
		if _, ok := r.Limits[k]; !ok {
			r.Limits[k] = v
		}
	}
	// 2. defaultPodLevelRequests: overcommittable resources (cpu, memory).
	for k, v := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			continue
		}
		if _, ok := r.Requests[k]; !ok {
			r.Requests[k] = v
		}
	}
	for k, v := range r.Limits {
		if _, ok := r.Requests[k]; !ok && resourcehelper.IsSupportedPodLevelResource(k) {
			r.Requests[k] = v.DeepCopy()
		}
	}
	// 3. defaultPodLevelLimits
	var candidates []corev1.ResourceName
	for k := range r.Requests {
		if _, ok := r.Limits[k]; !ok && resourcehelper.IsSupportedPodLevelResource(k) && allHaveLimit(s, k) {
			candidates = append(candidates, k)
		}
	}
	if len(candidates) > 0 {
		aggr := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
		for _, k := range candidates {
			v, ok := aggr[k]
			if !ok {
				continue
			}
			if req := r.Requests[k]; req.Cmp(v) > 0 {
				v = req
			}
			r.Limits[k] = v
		}
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
}

// allHaveLimit: every container, init containers included, has a limit for k.
func allHaveLimit(s *corev1.PodSpec, k corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for _, c := range list {
			if _, ok := c.Resources.Limits[k]; !ok {
				return false
			}
		}
	}
	return true
}
