package podcfg

import (
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SwapController is the swap controller the kubelet finds on the machine
// (kuberuntime_container_linux.go checkSwapControllerAvailability).
type SwapController int

const (
	// SwapNone: no swap controller (no memory.memsw.limit_in_bytes on
	// cgroup v1, no memory.swap.max on cgroup v2); the kubelet sets no swap.
	SwapNone SwapController = iota
	// SwapCgroupV1: cgroup v1 with /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes.
	SwapCgroupV1
	// SwapCgroupV2: cgroup v2 with memory.swap.max in the kubelet's own cgroup.
	SwapCgroupV2
)

// cgroup2MaxSwapFilename is cm.Cgroup2MaxSwapFilename, the unified key.
const cgroup2MaxSwapFilename = "memory.swap.max"

// configureSwap mirrors kuberuntime_container_linux.go
// configureContainerSwapResources with the default memorySwap.swapBehavior
// ("", which GetContainerSwapBehavior turns into NoSwap) through
// swapConfigurationHelper.ConfigureNoSwap: on cgroup v1 the memory+swap limit
// equals the memory limit (so 0 for a container without one, which proto
// omits); on cgroup v2 unified memory.swap.max is "0" for every container.
// LimitedSwap (a kubelet configured with it, Burstable containers on cgroup
// v2) is not mirrored: podstep has no swapBehavior setting.
func configureSwap(r *runtimeapi.LinuxContainerResources, swap SwapController) {
	switch swap {
	case SwapCgroupV1:
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	case SwapCgroupV2:
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		r.Unified[cgroup2MaxSwapFilename] = strconv.Itoa(0)
	}
}
