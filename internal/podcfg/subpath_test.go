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

// TestSubPathExpr mirrors ExpandContainerVolumeMounts: every variable a
// subPathExpr names must be defined and non-empty, else the container's
// config fails with "missing value for A, B"; "$$" is still an escape.
func TestSubPathExpr(t *testing.T) {
	tests := []struct{ expr, want, err string }{
		{expr: "$(SUB)/logs", want: "dir/logs"},
		{expr: "$$(SUB)", want: "$(SUB)"},
		{expr: "$(UNDEFINED)/x", err: "missing value for UNDEFINED"},
		{expr: "$(EMPTY)x", err: "missing value for EMPTY"},
		{expr: "$(Z)/$(SUB)/$(A)/$(Z)", err: "missing value for A, Z"},
	}
	for _, tc := range tests {
		c := ctr("app", nil, nil)
		c.Env = []corev1.EnvVar{{Name: "SUB", Value: "dir"}, {Name: "EMPTY"}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPathExpr: tc.expr}}
		pod := podWith(c)
		var got string
		in := ContainerInput{
			Container:       &pod.Spec.Containers[0],
			VolumeHostPaths: map[string]string{"data": "/vol/data"},
			PrepareSubPath:  func(sp SubPath) (string, error) { got = sp.SubPath; return "/bound", nil },
		}
		_, err := ContainerConfig(pod, nil, in, Options{})
		var ce *ConfigError
		switch {
		case tc.err != "" && (!errors.As(err, &ce) || ce.Msg != tc.err):
			t.Errorf("%q: error %v, want ConfigError %q", tc.expr, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: subPath %q (%v), want %q", tc.expr, got, err, tc.want)
		}
	}
}
