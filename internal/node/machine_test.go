package node

import "testing"

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
