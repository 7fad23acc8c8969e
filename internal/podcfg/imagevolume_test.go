package podcfg

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageVolumeMounts: a mount of an image volume carries the ImageSpec
// the kubelet pulled (getImageVolumes), the subPath as image_sub_path, no
// host path, read-only whatever the volumeMount says (the image plugin's
// attributes); other mounts are unchanged (makeMounts, kubelet_pods.go).
func TestImageVolumeMounts(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-1"
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "tools", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "reg/tools:1", PullPolicy: corev1.PullIfNotPresent}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{
		{Name: "tools", MountPath: "/tools"},
		{Name: "tools", MountPath: "/bin-only", SubPath: "usr/bin"},
		{Name: "scratch", MountPath: "/scratch"},
	}}}
	defaultPod(pod)
	spec := &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "reg/tools:1"}
	cfg, err := ContainerConfig(pod, nil, ContainerInput{Container: &pod.Spec.Containers[0],
		VolumeHostPaths: map[string]string{"tools": "", "scratch": "/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"},
		ImageVolumes:    map[string]*runtimeapi.ImageSpec{"tools": spec}}, Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		path, host, sub string
		image, ro       bool
	}{
		{"/tools", "", "", true, true},
		{"/bin-only", "", "usr/bin", true, true},
		{"/scratch", "/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch", "", false, false},
	}
	if len(cfg.Mounts) != len(want) {
		t.Fatalf("mounts %v, want %d", cfg.Mounts, len(want))
	}
	for i, w := range want {
		m := cfg.Mounts[i]
		if m.ContainerPath != w.path || m.HostPath != w.host || m.ImageSubPath != w.sub || (m.Image == spec) != w.image || m.Readonly != w.ro {
			t.Errorf("mount %d = %v, want path %s host %q image_sub_path %q image %t readonly %t", i, m, w.path, w.host, w.sub, w.image, w.ro)
		}
	}
}
