package fieldpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func testPod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Limits: list("memory", "32Mi")}}},
		Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: list("cpu", "250m", "memory", "64Mi", "hugepages-2Mi", "4Mi"),
				Limits:   list("cpu", "500m", "memory", "0", "hugepages-2Mi", "4Mi"),
			}},
			{Name: "bare"},
		},
	}}
}

// TestResourceValues: the resource values of the downward API, with and
// without the node's allocatable as the default limit.
func TestResourceValues(t *testing.T) {
	alloc := list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "20Gi", "pods", "110")
	sel := func(res, divisor string) *corev1.ResourceFieldSelector {
		fs := &corev1.ResourceFieldSelector{Resource: res}
		if divisor != "" {
			fs.Divisor = resource.MustParse(divisor)
		}
		return fs
	}
	tests := []struct {
		container string
		fs        *corev1.ResourceFieldSelector
		want      string // without allocatable
		withAlloc string // with allocatable ("" = same as want)
		err       string
	}{
		{container: "app", fs: sel("limits.cpu", ""), want: "1"},
		{container: "app", fs: sel("limits.cpu", "1m"), want: "500"},
		{container: "app", fs: sel("requests.cpu", "1m"), want: "250"},
		{container: "app", fs: sel("requests.cpu", "100m"), want: "3"},
		{container: "app", fs: sel("requests.memory", "1Mi"), want: "64"},
		// A zero limit counts as none: allocatable replaces it.
		{container: "app", fs: sel("limits.memory", "1Mi"), want: "0", withAlloc: "8192"},
		{container: "app", fs: sel("limits.ephemeral-storage", "1Gi"), want: "0", withAlloc: "20"},
		{container: "app", fs: sel("limits.hugepages-2Mi", ""), want: "4194304"},
		{container: "app", fs: sel("requests.hugepages-2Mi", "1Mi"), want: "4"},
		{container: "bare", fs: sel("limits.cpu", "1m"), want: "0", withAlloc: "4000"},
		{container: "bare", fs: sel("limits.memory", ""), want: "0", withAlloc: "8589934592"},
		// Requests are never defaulted; hugepages never take allocatable.
		{container: "bare", fs: sel("requests.cpu", ""), want: "0"},
		{container: "bare", fs: sel("limits.hugepages-2Mi", ""), want: "0"},
		{container: "init", fs: sel("limits.memory", "1Mi"), want: "32"},
		{container: "init", fs: sel("limits.cpu", ""), want: "0", withAlloc: "4"},
		{container: "app", fs: sel("limits.pods", ""), err: "unsupported container resource : limits.pods"},
		{container: "app", fs: sel("cpu", ""), err: "unsupported container resource : cpu"},
		{container: "gone", fs: sel("limits.cpu", ""), err: "container gone not found"},
	}
	for _, tc := range tests {
		pod := testPod()
		before := pod.DeepCopy()
		for _, a := range []corev1.ResourceList{nil, alloc} {
			got, err := ExtractResourceValueByContainerNameAndNodeAllocatable(tc.fs, pod, tc.container, a)
			want := tc.want
			if a != nil && tc.withAlloc != "" {
				want = tc.withAlloc
			}
			switch {
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("%s %s: error %v, want %q", tc.container, tc.fs.Resource, err, tc.err)
			case tc.err == "" && (err != nil || got != want):
				t.Errorf("%s %s /%s (allocatable %v) = %q (%v), want %q", tc.container, tc.fs.Resource, tc.fs.Divisor.String(), a != nil, got, err, want)
			}
		}
		got, err := ExtractResourceValueByContainerName(tc.fs, pod, tc.container)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("%s %s by name = %q (%v), want %q", tc.container, tc.fs.Resource, got, err, tc.want)
		}
		if pod.Spec.Containers[0].Resources.Limits.Memory().String() != before.Spec.Containers[0].Resources.Limits.Memory().String() ||
			pod.Spec.Containers[1].Resources.Limits != nil {
			t.Errorf("%s %s: the pod was changed", tc.container, tc.fs.Resource)
		}
	}
}

func TestMergeContainerResourceLimits(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{Limits: list("cpu", "0", "memory", "1Gi")}}
	MergeContainerResourceLimits(c, list("cpu", "2", "memory", "8Gi", "hugepages-2Mi", "1Gi"))
	got := c.Resources.Limits
	if len(got) != 2 || got.Cpu().String() != "2" || got.Memory().String() != "1Gi" {
		t.Errorf("limits %v, want cpu 2 (zero replaced), memory 1Gi (kept), no hugepages", got)
	}
	c = &corev1.Container{}
	MergeContainerResourceLimits(c, nil)
	if c.Resources.Limits == nil || len(c.Resources.Limits) != 0 {
		t.Errorf("limits %v, want empty", c.Resources.Limits)
	}
}
