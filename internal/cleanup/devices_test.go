package cleanup

import (
	"reflect"
	"testing"
)

// TestDeviceMountsIn: the device mounts directly below the local volumes'
// mounts dir, and which devices a pod dir still has bind-mounted (such a
// device mount is in use: DeviceMounts leaves it).
func TestDeviceMountsIn(t *testing.T) {
	const table = `22 1 253:0 / / rw,relatime - ext4 /dev/vda rw
501 22 7:0 / /r/plugins/kubernetes.io/local-volume/mounts/pv-a rw,relatime - ext4 /dev/loop0 rw
502 22 7:1 / /r/plugins/kubernetes.io/local-volume/mounts/pv\040b rw,relatime - xfs /dev/loop1 rw
503 22 7:0 / /r/pods/uid-1/volumes/kubernetes.io~local-volume/pv-a rw,relatime - ext4 /dev/loop0 rw
504 22 7:2 / /r/plugins/kubernetes.io/local-volume/mounts/pv-c/deeper rw - ext4 /dev/loop2 rw
505 22 7:3 / /other/pods/x rw - ext4 /dev/loop3 rw
bad line
`
	devs, used := deviceMountsIn(table, "/r/plugins/kubernetes.io/local-volume/mounts", "/r/pods")
	want := []devMount{
		{"/r/plugins/kubernetes.io/local-volume/mounts/pv b", "7:1", "xfs"},
		{"/r/plugins/kubernetes.io/local-volume/mounts/pv-a", "7:0", "ext4"},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Errorf("device mounts %v, want %v", devs, want)
	}
	if !reflect.DeepEqual(used, map[string]bool{"7:0": true}) {
		t.Errorf("used %v, want only 7:0 (pv-a, bind-mounted into pod uid-1)", used)
	}
}
