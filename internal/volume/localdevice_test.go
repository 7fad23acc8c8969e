package volume

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
)

// loopDevice attaches a fresh image file of 32 MiB to a loop device and
// detaches it at the end. It needs root and losetup.
func loopDevice(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a loop device and its mounts need root")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// TestLocalBlockDevice: a local PersistentVolume whose path is a block
// device is formatted when it has no file system (mkfs.ext4 -F -m0, the
// default fsType), mounted at the kubelet's
// plugins/kubernetes.io/local-volume/mounts/PV, bind-mounted into the pod;
// the teardown unmounts the pod's bind mount, then the device
// (UnmountDevice), and removes the device mount dir. A second pod finds
// the file system (no mkfs) and the first pod's file. A read-only claim of
// an unformatted device fails as mount-utils does.
func TestLocalBlockDevice(t *testing.T) {
	dev := loopDevice(t)
	root := t.TempDir()
	pvcVol := func(ro bool) corev1.Volume {
		return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: ro}}}
	}
	pv := hostPathPV("pv-disk", "")
	pv.Spec.HostPath, pv.Spec.Local = nil, &corev1.LocalVolumeSource{Path: dev}
	host := func() *Host {
		h := testHost(testSource())
		h.Claims = claims{pvcs: map[string]*corev1.PersistentVolumeClaim{"default/data": boundClaim("data", "pv-disk")}, pvs: map[string]*corev1.PersistentVolume{"pv-disk": pv}}
		h.Mount, h.RootDir = true, root
		return h
	}
	global := filepath.Join(root, "plugins", "kubernetes.io", "local-volume", "mounts", "pv-disk")
	setup := func(t *testing.T, uid string, ro bool) (Result, string, error) {
		pod := testPod()
		pod.UID = ktypes.UID("uid-" + uid)
		podDir := filepath.Join(root, "pods", string(pod.UID))
		h := host()
		planned := h.PlannedPath(pod, podDir, pvcVol(ro))
		r, err := h.Setup(context.Background(), pod, pvcVol(ro), planned)
		return r, podDir, err
	}

	t.Run("read-only claim of an unformatted device", func(t *testing.T) {
		_, _, err := setup(t, "ro", true)
		if err == nil || !strings.Contains(err.Error(), "cannot mount unformatted disk "+dev+" as we are manipulating it in read-only mode") ||
			!strings.HasPrefix(err.Error(), `MountVolume.MountDevice failed for volume "v" : local: failed to mount device `) {
			t.Fatalf("error %v", err)
		}
		if _, err := os.Stat(global); !os.IsNotExist(err) {
			t.Errorf("the device mount dir was left after the failed mount: %v", err)
		}
	})

	for i, wantFormat := range []bool{true, false} {
		r, podDir, err := setup(t, string(rune('a'+i)), false)
		if err != nil {
			t.Fatal(err)
		}
		if r.Device == nil || r.Device.Path != global || r.Device.FSType != "ext4" || r.Device.Formatted != wantFormat {
			t.Fatalf("pod %d: device mount %+v, want %s ext4 formatted=%v", i, r.Device, global, wantFormat)
		}
		if want := filepath.Join(podDir, "volumes", "kubernetes.io~local-volume", "pv-disk"); r.Path != want {
			t.Fatalf("path %s, want %s", r.Path, want)
		}
		if out, err := exec.Command("blkid", "-p", "-s", "TYPE", "-o", "value", dev).Output(); err != nil || strings.TrimSpace(string(out)) != "ext4" {
			t.Fatalf("blkid %s: %q %v", dev, out, err)
		}
		if i == 0 {
			if err := os.WriteFile(filepath.Join(r.Path, "written"), []byte("by pod a"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if data, err := os.ReadFile(filepath.Join(r.Path, "written")); err != nil || string(data) != "by pod a" {
			t.Fatalf("the second pod does not see the first pod's file: %q %v", data, err)
		}
		ms, _ := Mounts(global)
		if len(ms) != 1 || ms[0].FSType != "ext4" {
			t.Fatalf("mounts at %s: %v", global, ms)
		}
		if done, err := TeardownPod(podDir); err != nil || len(done) != 1 {
			t.Fatalf("teardown: %v, unmounted %v", err, done)
		}
		if err := UnmountDevice(r.Device); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(global); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after UnmountDevice: %v", global, err)
		}
		if ms, _ := Mounts(root); len(ms) != 0 {
			t.Fatalf("mounts left under %s: %v", root, ms)
		}
	}
}

// TestLocalPathKinds: the local plugin mounts a directory or a block
// device, and says so for anything else (getGlobalLocalPath).
func TestLocalPathKinds(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: f}}}}
	if _, err := localPathKind(pv); err == nil || err.Error() != "only directory and block device are supported" {
		t.Errorf("a regular file: %v", err)
	}
	pv.Spec.Local.Path = t.TempDir()
	if k, err := localPathKind(pv); err != nil || k != corev1.HostPathDirectory {
		t.Errorf("a directory: %v %v", k, err)
	}
}

// TestMountOptions: MountOptionFromSpec's rules: the annotation wins over
// spec.mountOptions, both are joined with the system's as a sorted set,
// and without either the system's are used as they are.
func TestMountOptions(t *testing.T) {
	for _, tc := range []struct {
		ann  *string
		spec []string
		sys  []string
		want []string
	}{
		{nil, nil, []string{"ro"}, []string{"ro"}},
		{nil, nil, nil, nil},
		{nil, []string{"noatime", "discard"}, []string{"ro"}, []string{"discard", "noatime", "ro"}},
		{ptr("sync,noatime"), []string{"discard"}, nil, []string{"noatime", "sync"}},
		{ptr("ro"), nil, []string{"ro"}, []string{"ro"}},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{MountOptions: tc.spec}}
		if tc.ann != nil {
			pv.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{corev1.MountOptionAnnotation: *tc.ann}}
		}
		if got := mountOptions(pv, tc.sys); !slices.Equal(got, tc.want) {
			t.Errorf("annotation %v spec %v sys %v: %v, want %v", tc.ann, tc.spec, tc.sys, got, tc.want)
		}
	}
}
