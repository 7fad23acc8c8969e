package fieldpath

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ExtractResourceValueByContainerName is the resource value fs selects of
// the pod's container named name, its limits as they are.
func ExtractResourceValueByContainerName(fs *corev1.ResourceFieldSelector, pod *corev1.Pod, name string) (string, error) {
	c, err := FindContainer(pod, name)
	if err != nil {
		return "", err
	}
	return ExtractContainerResourceValue(fs, c)
}

// ExtractResourceValueByContainerNameAndNodeAllocatable is the resource
// value fs selects of the pod's container named name, a missing limit taken
// from the node's allocatable (MergeContainerResourceLimits). downwardAPI
// volumes use it.
func ExtractResourceValueByContainerNameAndNodeAllocatable(fs *corev1.ResourceFieldSelector, pod *corev1.Pod, name string, allocatable corev1.ResourceList) (string, error) {
	c, err := FindContainer(pod, name)
	if err != nil {
		return "", err
	}
	c = c.DeepCopy()
	MergeContainerResourceLimits(c, allocatable)
	return ExtractContainerResourceValue(fs, c)
}

// ExtractContainerResourceValue is the resource value fs selects of c:
// limits or requests of cpu (in millicores over the divisor's), memory,
// ephemeral-storage or hugepages-<size>, divided by the divisor (default 1)
// and rounded up; a resource c does not set is 0.
func ExtractContainerResourceValue(fs *corev1.ResourceFieldSelector, c *corev1.Container) (string, error) {
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var list corev1.ResourceList
	name, ok := strings.CutPrefix(fs.Resource, "limits.")
	if ok {
		list = c.Resources.Limits
	} else if name, ok = strings.CutPrefix(fs.Resource, "requests."); ok {
		list = c.Resources.Requests
	}
	switch {
	case !ok:
	case name == string(corev1.ResourceCPU):
		q := list.Cpu()
		return ceilDiv(float64(q.MilliValue()), float64(divisor.MilliValue())), nil
	case name == string(corev1.ResourceMemory) || name == string(corev1.ResourceEphemeralStorage) ||
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		q := list.Name(corev1.ResourceName(name), resource.BinarySI)
		return ceilDiv(float64(q.Value()), float64(divisor.Value())), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}

func ceilDiv(v, divisor float64) string {
	return strconv.FormatInt(int64(math.Ceil(v/divisor)), 10)
}

// FindContainer finds the pod's container named name, among its
// containers, then its init containers (findContainerInPod).
func FindContainer(pod *corev1.Pod, name string) (*corev1.Container, error) {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
		}
	}
	return nil, fmt.Errorf("container %s not found", name)
}

// MergeContainerResourceLimits sets each of c's cpu, memory and
// ephemeral-storage limits that is missing or zero to the allocatable
// value, when allocatable has one. Hugepages are never defaulted: they are
// not overcommitted, so a container that uses them has a limit.
func MergeContainerResourceLimits(c *corev1.Container, allocatable corev1.ResourceList) {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
			continue
		}
		if a, ok := allocatable[name]; ok {
			c.Resources.Limits[name] = a.DeepCopy()
		}
	}
}
