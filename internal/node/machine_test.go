package node

import (
	"os"
	"syscall"
	"testing"

	"github.com/podstep/podstep/internal/podcfg"
)

// TestMachineFacts: this machine's memory is read once, by Local, and huge
// page sizes are whole pages.
func TestMachineFacts(t *testing.T) {
	mem := memTotal()
	if mem <= 0 || mem%1024 != 0 {
		t.Fatalf("memTotal = %d, want a positive number of KiB", mem)
	}
	n := Local()
	if got := n.Object.Status.Capacity.Memory().Value(); got != mem {
		t.Errorf("capacity memory %d, want MemTotal %d", got, mem)
	}
	if got := n.Object.Status.Allocatable.Memory().Value(); got != mem-100<<20 {
		t.Errorf("allocatable memory %d, want MemTotal - 100Mi", got)
	}
	for _, size := range HugePageSizes() {
		if size < 4096 || size&(size-1) != 0 {
			t.Errorf("huge page size %d: not a power of two of at least 4096", size)
		}
	}
}

// TestSwapController: on a cgroup v1 machine (statfs of /sys/fs/cgroup is
// not cgroup2), the answer follows memory.memsw.limit_in_bytes, as the
// kubelet's checkSwapControllerAvailability does; on cgroup v2 it is never
// the v1 answer.
func TestSwapController(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		if got := SwapController(); got != podcfg.SwapNone {
			t.Fatalf("SwapController() = %v without /sys/fs/cgroup, want SwapNone", got)
		}
		return
	}
	got := SwapController()
	if st.Type == cgroup2SuperMagic {
		if got == podcfg.SwapCgroupV1 {
			t.Errorf("SwapController() = SwapCgroupV1 on cgroup v2")
		}
		return
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	want := podcfg.SwapNone
	if err == nil {
		want = podcfg.SwapCgroupV1
	}
	if got != want {
		t.Errorf("SwapController() = %v on cgroup v1, want %v", got, want)
	}
}
