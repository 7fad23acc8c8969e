package volume

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseMountinfo: the mounts at or below a dir, from a mountinfo
// table: optional fields before the "-", octal escapes, a prefix that is
// not a parent dir, lines that are not mountinfo.
func TestParseMountinfo(t *testing.T) {
	const table = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /var/lib/k/pods/u1/volumes/kubernetes.io~secret/s rw,relatime shared:7 master:2 - tmpfs tmpfs rw,size=1024k
31 22 0:26 / /var/lib/k/pods/u1/volumes/kubernetes.io~empty-dir/m rw - tmpfs tmpfs rw
32 22 0:27 / /var/lib/k/pods/u10/volumes/x rw - tmpfs tmpfs rw
33 22 0:28 / /var/lib/k/pods/a\040b/volumes/y rw - tmpfs tmpfs rw
34 22 0:29 / /var/lib/k/pods/u1 rw - ext4 /dev/vdb rw
short line
35 22 0:30 / /var/lib/k/pods/u1/notenough rw
36 22 0:31 / /var/lib/k/pods/u1/nodash rw shared:9
`
	for _, tc := range []struct {
		dir  string
		want []Mount
	}{
		{"/var/lib/k/pods/u1", []Mount{
			{"/var/lib/k/pods/u1/volumes/kubernetes.io~secret/s", "tmpfs"},
			{"/var/lib/k/pods/u1/volumes/kubernetes.io~empty-dir/m", "tmpfs"},
			{"/var/lib/k/pods/u1", "ext4"},
			{"/var/lib/k/pods/u1/nodash", ""},
		}},
		{"/var/lib/k/pods/u10", []Mount{{"/var/lib/k/pods/u10/volumes/x", "tmpfs"}}},
		{"/var/lib/k/pods/a b", []Mount{{"/var/lib/k/pods/a b/volumes/y", "tmpfs"}}},
		{"/var/lib/k/pods/u2", nil},
		{"/", []Mount{{"/", "ext4"}}},
	} {
		if got := parseMountinfo(table, tc.dir); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.dir, got, tc.want)
		}
	}
}

// TestTeardownPodReads: TeardownPod reads the mount table once for a pod
// with nothing mounted (the common pod, and podstep bench's), twice when
// it unmounted a volume (to check nothing is left), and still refuses a
// pod dir with a mount it does not own below it.
func TestTeardownPodReads(t *testing.T) {
	reads := 0
	read := readMountTable
	readMountTable = func() ([]byte, error) { reads++; return read() }
	t.Cleanup(func() { readMountTable = read })

	podDir := filepath.Join(t.TempDir(), "pods", "uid")
	vol := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "m")
	if err := os.MkdirAll(vol, 0o750); err != nil {
		t.Fatal(err)
	}
	if ms, err := TeardownPod(podDir); err != nil || len(ms) != 0 || reads != 1 {
		t.Errorf("nothing mounted: %+v %v, %d reads of the mount table, want none unmounted in 1 read", ms, err, reads)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: cannot mount a tmpfs to check the unmount and the refusal")
		return
	}
	mount := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		// Only in case the test stops early: TeardownPod below unmounts it,
		// and then this fails (not mounted), as it should.
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	mount(vol)
	reads = 0
	if ms, err := TeardownPod(podDir); err != nil || len(ms) != 1 || reads != 2 {
		t.Errorf("a tmpfs volume: %+v %v, %d reads, want it unmounted in 2 reads", ms, err, reads)
	}
	if ms, _ := Mounts(podDir); len(ms) != 0 {
		t.Errorf("left mounted: %+v", ms)
	}
	mount(vol)
	other := filepath.Join(podDir, "other")
	mount(other)
	ms, err := TeardownPod(podDir)
	if err == nil || !strings.Contains(err.Error(), "still mounted below") || !strings.Contains(err.Error(), other) {
		t.Errorf("%s mounted: %v, want still mounted below naming it", other, err)
	}
	if len(ms) != 1 || ms[0].Path != vol {
		t.Errorf("%s mounted: unmounted %+v, want the volume %s", other, ms, vol)
	}
}
