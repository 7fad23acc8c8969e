package podcfg

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podstep/podstep/internal/fieldpath"
)

// fieldRefValue mirrors kubelet_pods.go podFieldSelectorRuntimeValue: the
// path is checked by ConvertDownwardAPIFieldLabel (an empty apiVersion is
// v1, the API server's default); spec.*, status.* are the kubelet's own
// fields; the rest is fieldpath.ExtractFieldPathAsString on the pod as the
// kubelet has it, with its config annotations. A static pod's nodeName is
// the kubelet's node (config/common.go applyDefaults sets it).
func fieldRefValue(fs *corev1.ObjectFieldSelector, pod *corev1.Pod, in ContainerInput, o Options) (string, error) {
	version := fs.APIVersion
	if version == "" {
		version = "v1"
	}
	path, err := fieldpath.ConvertDownwardAPIFieldLabel(version, fs.FieldPath)
	if err != nil {
		return "", &ConfigError{Msg: err.Error()}
	}
	switch path {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return o.nodeName(), nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(in.HostIPs) > 0 {
			return in.HostIPs[0], nil
		}
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		if len(in.HostIPs) > 0 {
			return strings.Join(in.HostIPs, ","), nil
		}
		ips := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		return in.PodIP, nil
	case "status.podIPs":
		return strings.Join(in.PodIPs, ","), nil
	}
	meta := &pod.ObjectMeta
	if strings.HasPrefix(path, "metadata.annotations") {
		withConfig := *meta
		withConfig.Annotations = PodAnnotations(pod, o)
		meta = &withConfig
	}
	v, err := fieldpath.ExtractFieldPathAsString(meta, path)
	if err != nil {
		return "", &ConfigError{Msg: err.Error()}
	}
	return v, nil
}

// resourceFieldRefValue mirrors kubelet_pods.go containerResourceRuntimeValue
// on the pod and container defaultPodLimitsForDownwardAPI
// (kubelet_resources.go) returns: c and the pod's regular containers get
// their missing cpu, memory and ephemeral-storage limits from
// downwardAPIAllocatable; an init container named by containerName keeps
// its limits as they are, as in the kubelet.
func resourceFieldRefValue(fs *corev1.ResourceFieldSelector, pod *corev1.Pod, c *corev1.Container, o Options) (string, error) {
	target := c
	if fs.ContainerName != "" {
		var err error
		if target, err = fieldpath.FindContainer(pod, fs.ContainerName); err != nil {
			return "", &ConfigError{Msg: err.Error()}
		}
	}
	if fs.ContainerName == "" || isRegularContainer(pod, target) {
		defaulted := &corev1.Container{Resources: *target.Resources.DeepCopy()}
		fieldpath.MergeContainerResourceLimits(defaulted, downwardAPIAllocatable(pod, o))
		target = defaulted
	}
	v, err := fieldpath.ExtractContainerResourceValue(fs, target)
	if err != nil {
		return "", &ConfigError{Msg: err.Error()}
	}
	return v, nil
}

func isRegularContainer(pod *corev1.Pod, c *corev1.Container) bool {
	for i := range pod.Spec.Containers {
		if &pod.Spec.Containers[i] == c {
			return true
		}
	}
	return false
}

// downwardAPIAllocatable is the default limits of defaultPodLimitsForDownwardAPI:
// the node's allocatable, with the pod-level cpu and memory limits in their
// place when the pod sets any (PodLevelResources, on by default).
func downwardAPIAllocatable(pod *corev1.Pod, o Options) corev1.ResourceList {
	alloc := o.nodeAllocatable()
	if !resourcehelper.IsPodLevelLimitsSet(pod) {
		return alloc
	}
	alloc = alloc.DeepCopy()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if !resourcehelper.IsSupportedPodLevelResource(name) {
			continue
		}
		if v, ok := pod.Spec.Resources.Limits[name]; ok && !v.IsZero() {
			if _, ok := alloc[name]; ok {
				alloc[name] = v.DeepCopy()
			}
		}
	}
	return alloc
}
