package podcfg

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestContainerSwap: the kubelet's ConfigureNoSwap (the default swap
// behaviour): on cgroup v1 with the memsw controller, a container's
// memory+swap limit is its memory limit (the reference traces' host); on
// cgroup v2 unified memory.swap.max is "0" for every container; without a
// swap controller nothing is set. The sandbox never gets a swap limit.
func TestContainerSwap(t *testing.T) {
	limited := podWith(ctr("a", res("memory", "64Mi"), res("memory", "64Mi")))
	podLevel := podWith(ctr("a", nil, nil))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: res("memory", "128Mi")}
	for _, tc := range []struct {
		name string
		swap SwapController
		pod  *corev1.Pod
		want string
	}{
		{"v1 memory limit", SwapCgroupV1, limited,
			`{"cpu_period":"100000","cpu_shares":"2","memory_limit_in_bytes":"67108864","oom_score_adj":"993","memory_swap_limit_in_bytes":"67108864"}`},
		{"v1 pod-level memory limit", SwapCgroupV1, podLevel,
			`{"cpu_period":"100000","cpu_shares":"2","memory_limit_in_bytes":"134217728","oom_score_adj":"999","memory_swap_limit_in_bytes":"134217728"}`},
		{"v1 no limit", SwapCgroupV1, podWith(ctr("a", nil, nil)),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"1000"}`},
		{"v2 memory limit", SwapCgroupV2, limited,
			`{"cpu_period":"100000","cpu_shares":"2","memory_limit_in_bytes":"67108864","oom_score_adj":"993","unified":{"memory.swap.max":"0"}}`},
		{"v2 no limit", SwapCgroupV2, podWith(ctr("a", nil, nil)),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"1000","unified":{"memory.swap.max":"0"}}`},
		{"no controller", SwapNone, limited,
			`{"cpu_period":"100000","cpu_shares":"2","memory_limit_in_bytes":"67108864","oom_score_adj":"993"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Node: testNode("n"), Swap: tc.swap}
			eq(t, "resources", jsonOf(t, containerResources(tc.pod, &tc.pod.Spec.Containers[0], o)), tc.want)
			if s := sandboxResources(tc.pod); s.MemorySwapLimitInBytes != 0 || s.Unified != nil {
				t.Errorf("sandbox resources = %v, want no swap", s)
			}
		})
	}
}
