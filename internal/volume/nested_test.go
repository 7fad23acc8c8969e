package volume

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// mounts is a container mounting name→path pairs.
func mounts(name string, pairs ...string) corev1.Container {
	c := corev1.Container{Name: name}
	for i := 0; i+1 < len(pairs); i += 2 {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: pairs[i], MountPath: pairs[i+1]})
	}
	return c
}

// TestNestedMountpoints: the mount points the kubelet makes in a volume for
// the volumes mounted beneath it (getNestedMountpoints), case by case.
func TestNestedMountpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want []string
		err  string
	}{
		{name: "none beneath", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("a", "cfg", "/etc/app", "data", "/var/data")}}},
		// 103 grafana: its config secret at /etc/grafana, two volumes at
		// /etc/grafana/provisioning/{datasources,dashboards}.
		{name: "grafana", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("grafana",
			"ds", "/etc/grafana/provisioning/datasources", "db", "/etc/grafana/provisioning/dashboards",
			"tmp", "/tmp", "cfg", "/etc/grafana")}},
			want: []string{"provisioning/dashboards", "provisioning/datasources"}},
		{name: "double nested: only the first level", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("a",
			"cfg", "/dir", "n", "/dir/nested", "o", "/dir/nested/other", "p", "/dir/nested2")}},
			want: []string{"nested", "nested2"}},
		// sorted, /dir/nested-vol and /dir/nested.vol come between /dir/nested
		// and /dir/nested/double: a list of taken prefixes, not the last one.
		{name: "siblings sorting between", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("a",
			"cfg", "/dir", "n", "/dir/nested", "v", "/dir/nested-vol", "w", "/dir/nested.vol", "d", "/dir/nested/double")}},
			want: []string{"nested", "nested-vol", "nested.vol"}},
		{name: "cleaned paths", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("a", "cfg", "/etc/app/", "n", "/etc/app//sub/")}},
			want: []string{"sub"}},
		{name: "every container, init and ephemeral too", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{mounts("init", "cfg", "/cfg", "x", "/cfg/x")},
			Containers:     []corev1.Container{mounts("app", "cfg", "/conf", "y", "/conf/y"), mounts("side", "y", "/conf/y")},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(
				mounts("debug", "cfg", "/c", "z", "/c/z"))}}},
			want: []string{"x", "y", "z"}},
		{name: "another container's mounts are not nested", spec: corev1.PodSpec{Containers: []corev1.Container{
			mounts("a", "cfg", "/etc/app"), mounts("b", "n", "/etc/app/sub")}}},
		{name: "a relative path climbing out", spec: corev1.PodSpec{Containers: []corev1.Container{mounts("a", "cfg", "../up", "n", "../up/x")}},
			err: "invalid container mount point ../up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nestedMountpoints("cfg", &corev1.Pod{Spec: tc.spec})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNestedMountpointsMade: a secret volume with volumes mounted beneath it
// gets their mount points as dirs (0755) beside its payload's links, and a
// note says so; without them runc cannot mount into a read-only volume.
func TestNestedMountpointsMade(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "v", MountPath: "/etc/grafana"}, {Name: "ds", MountPath: "/etc/grafana/provisioning/datasources"}}
	dir := filepath.Join(t.TempDir(), "vol")
	vol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
	r, err := testHost(testSource()).Setup(context.Background(), pod, vol, dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "provisioning", "datasources"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("provisioning/datasources: %v %v, want a dir 0755", fi, err)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.Contains(n, "MakeNestedMountpoints") && strings.Contains(n, "provisioning/datasources")
	}) {
		t.Errorf("notes %q: none names the mount point made", r.Notes)
	}
	if _, err := os.Readlink(filepath.Join(dir, "..data")); err != nil {
		t.Errorf("the payload was not written: %v", err)
	}
}
