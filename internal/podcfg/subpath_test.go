package podcfg

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPrepareSubPath: each volumeMount with a subPath (subPathExpr
// expanded) goes through ContainerInput.PrepareSubPath, whose path is the
// mount's host_path; its error is a ConfigError with the same message
// (CreateContainerConfigError). Mounts without a subPath do not.
func TestPrepareSubPath(t *testing.T) {
	c := ctr("app", nil, nil)
	c.Env = []corev1.EnvVar{{Name: "SUB", Value: "dir"}}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "data", MountPath: "/logs", SubPathExpr: "$(SUB)/logs"},
	}
	pod := podWith(c)
	var got []SubPath
	in := ContainerInput{
		Container:       &pod.Spec.Containers[0],
		VolumeHostPaths: map[string]string{"data": "/vol/data", "cfg": "/vol/cfg"},
		PrepareSubPath: func(sp SubPath) (string, error) {
			got = append(got, sp)
			return "/pod/volume-subpaths/" + sp.Volume, nil
		},
	}
	cfg, err := ContainerConfig(pod, nil, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "prepared", got, []SubPath{
		{Index: 1, Volume: "cfg", VolumePath: "/vol/cfg", SubPath: "app.conf"},
		{Index: 2, Volume: "data", VolumePath: "/vol/data", SubPath: "dir/logs"},
	})
	var hosts []string
	for _, m := range cfg.Mounts {
		hosts = append(hosts, m.HostPath)
	}
	eq(t, "host paths", hosts, []string{"/vol/data", "/pod/volume-subpaths/cfg", "/pod/volume-subpaths/data"})

	const msg = `failed to prepare subPath for volumeMount "cfg" of container "app"`
	in.PrepareSubPath = func(SubPath) (string, error) { return "", errors.New(msg) }
	_, err = ContainerConfig(pod, nil, in, Options{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Msg != msg {
		t.Errorf("error %v, want ConfigError %q", err, msg)
	}
}
