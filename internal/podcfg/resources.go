package podcfg

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPU constants of pkg/kubelet/cm/helpers_linux.go.
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	quotaPeriod    = 100000 // µs, the kubelet's default cpuCFSQuotaPeriod
	minQuotaPeriod = 1000
)

// MilliCPUToShares converts millicores to cgroup cpu shares like
// pkg/kubelet/cm/helpers_linux.go MilliCPUToShares: 0 → 2, else
// milli*1024/1000 clamped to [2, 262144].
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	if shares < minShares {
		return minShares
	}
	if shares > maxShares {
		return maxShares
	}
	return shares
}

// MilliCPUToQuota converts a CPU limit to a CFS quota for the given period like
// pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota: 0 (no limit) → 0, else
// milli*period/1000, at least 1000.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	q := milliCPU * period / milliCPUToCPU
	if q < minQuotaPeriod {
		q = minQuotaPeriod
	}
	return q
}

// linuxResources mirrors kuberuntime_container_linux.go calculateLinuxResources
// (cpuCFSQuota on, the default; no exclusive CPUs; cgroup v1 style, no
// memory.oom.group since singleProcessOOMKill is unset).
func linuxResources(cpuRequest *resource.Quantity, cpuLimit, memLimit resource.Quantity) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuRequest == nil {
		r.CpuShares = MilliCPUToShares(cpuLimit.MilliValue())
	} else {
		r.CpuShares = MilliCPUToShares(cpuRequest.MilliValue())
	}
	if m := memLimit.Value(); m != 0 {
		r.MemoryLimitInBytes = m
	}
	r.CpuPeriod = quotaPeriod
	r.CpuQuota = MilliCPUToQuota(cpuLimit.MilliValue(), quotaPeriod)
	return r
}

// containerResources mirrors generateLinuxContainerResources: cpu/memory from
// the container (pod-level limits when the container has none), oom_score_adj
// from the QoS policy and the node's memory capacity, hugepage limits for
// every page size of the machine, then the swap limit (configureSwap).
func containerResources(pod *corev1.Pod, c *corev1.Container, o Options) *runtimeapi.LinuxContainerResources {
	var cpuReq *resource.Quantity
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cpuReq = &q
	}
	cpuLim := c.Resources.Limits[corev1.ResourceCPU]
	memLim := c.Resources.Limits[corev1.ResourceMemory]
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		if cpuLim.IsZero() {
			cpuLim = pod.Spec.Resources.Limits[corev1.ResourceCPU]
		}
		if memLim.IsZero() {
			memLim = pod.Spec.Resources.Limits[corev1.ResourceMemory]
		}
	}
	r := linuxResources(cpuReq, cpuLim, memLim)
	r.OomScoreAdj = oomScoreAdj(pod, c, o.nodeMemoryCapacity(), o.QOS)
	r.HugepageLimits = hugepageLimits(c.Resources, o.HugePageSizes)
	configureSwap(r, o.Swap)
	return r
}

// sandboxResources mirrors kuberuntime_sandbox_linux.go calculateSandboxResources
// (pod requests/limits without overhead, pod-level resources honoured).
func sandboxResources(pod *corev1.Pod) *runtimeapi.LinuxContainerResources {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	req := resourcehelper.PodRequests(pod, opts)
	lim := resourcehelper.PodLimits(pod, opts)
	var cpuReq *resource.Quantity
	if q, ok := req[corev1.ResourceCPU]; ok {
		cpuReq = &q
	}
	return linuxResources(cpuReq, lim[corev1.ResourceCPU], lim[corev1.ResourceMemory])
}

// overheadResources mirrors convertOverheadToLinuxResources: {} without
// overhead, else the overhead treated as Guaranteed (requests == limits).
func overheadResources(pod *corev1.Pod) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu := pod.Spec.Overhead[corev1.ResourceCPU]
	mem := pod.Spec.Overhead[corev1.ResourceMemory]
	return linuxResources(&cpu, cpu, mem)
}

// hugePageUnitSize formats a page size in bytes as the kubelet does
// (v1helper.HugePageUnitSizeFromByteSize): 2097152 → "2MB".
func hugePageUnitSize(size int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return strconv.FormatInt(size, 10) + units[i]
}

// hugepageLimits mirrors GetHugepageLimitsFromResources: an entry for each
// of the machine's page sizes (Options.HugePageSizes), limit 0 unless the
// container sets hugepages-<size>.
func hugepageLimits(res corev1.ResourceRequirements, sizes []int64) []*runtimeapi.HugepageLimit {
	var out []*runtimeapi.HugepageLimit
	for _, size := range sizes {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: hugePageUnitSize(size)})
	}
	for name, q := range res.Limits {
		sizeStr, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		size, err := resource.ParseQuantity(sizeStr)
		if err != nil || size.Value() <= 0 {
			continue
		}
		unit := hugePageUnitSize(size.Value())
		for _, l := range out {
			if l.PageSize == unit {
				l.Limit = uint64(q.Value())
			}
		}
	}
	return out
}
