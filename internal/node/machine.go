package node

import (
	"bufio"
	"os"
	"path/filepath"

	"github.com/podstep/podstep/internal/podcfg"
	"strconv"
	"strings"
	"syscall"
)

// This file reads the facts of this machine that a kubelet gets from
// cAdvisor and libcontainer. They are read when asked for (Local,
// HugePageSizes), never at package init.

// memTotal reads MemTotal from /proc/meminfo in bytes (0 when unreadable),
// cAdvisor's MachineInfo.MemoryCapacity.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// rootFSSize is the size in bytes of the filesystem holding / (0 when unknown).
func rootFSSize() int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/", &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}

// HugePageSizes returns this machine's huge page sizes in bytes, in the
// order libcontainer's HugePageSizes lists them (the directory order of
// /sys/kernel/mm/hugepages, unsorted); nil when there are none. The
// kubelet sends a hugepage_limits entry for each in every container's
// resources.
func HugePageSizes() []int64 {
	d, err := os.Open("/sys/kernel/mm/hugepages")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(0) // unsorted, like the kubelet
	if err != nil {
		return nil
	}
	var out []int64
	for _, n := range names {
		kb, ok := strings.CutPrefix(n, "hugepages-")
		if !ok {
			continue
		}
		kb, ok = strings.CutSuffix(kb, "kB")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(kb, 10, 64); err == nil {
			out = append(out, v*1024)
		}
	}
	return out
}

// SwapController mirrors kuberuntime_container_linux.go
// checkSwapControllerAvailability: on cgroup v1, whether
// /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes exists; on cgroup v2,
// whether memory.swap.max exists in this process's own cgroup.
func SwapController() podcfg.SwapController {
	var st syscall.Statfs_t
	if err := syscall.Statfs(cgroupMount, &st); err != nil {
		return podcfg.SwapNone
	}
	if st.Type != cgroup2SuperMagic {
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"); err == nil {
			return podcfg.SwapCgroupV1
		}
		return podcfg.SwapNone
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return podcfg.SwapNone
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			if _, err := os.Stat(filepath.Join(cgroupMount, p, "memory.swap.max")); err == nil {
				return podcfg.SwapCgroupV2
			}
		}
	}
	return podcfg.SwapNone
}

// cgroup2SuperMagic is the statfs type of a cgroup v2 mount (libcontainer's
// IsCgroup2UnifiedMode checks it on /sys/fs/cgroup).
const cgroup2SuperMagic = 0x63677270

// cgroupMount is where the host mounts its cgroup hierarchy (v2) or hierarchies (v1).
const cgroupMount = "/sys/fs/cgroup"
