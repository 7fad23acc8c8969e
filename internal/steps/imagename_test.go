package steps

import (
	"strings"
	"testing"
)

// TestImageNameError: the names the kubelet's applyDefaultImageTag refuses
// (distribution/reference's ParseNormalizedNamed), with its message, and
// names it accepts.
func TestImageNameError(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"busybox", ""},
		{"docker.io/library/busybox:1.35", ""},
		{"registry.k8s.io/ingress-nginx/controller:v1.15.1@sha256:594ceea76b01c592858f803f9ff4d2cb40542cae2060410b2c95f75907d659e1", ""},
		{"localhost:5000/a/b_c__d-e:tag", ""},
		{"[::1]:5000/x", ""},
		{"gcr.io/google_containers/busybox", ""},
		{"<your-private-image>", `couldn't parse image name "<your-private-image>": invalid reference format`},
		{"<image_url>", `couldn't parse image name "<image_url>": invalid reference format`},
		{"Busybox", `couldn't parse image name "Busybox": invalid reference format: repository name (library/Busybox) must be lowercase`},
		{"example.com/Foo:1", `couldn't parse image name "example.com/Foo:1": invalid reference format: repository name (Foo) must be lowercase`},
		{strings.Repeat("a", 64), "cannot specify 64-byte hexadecimal strings"},
		{"busybox:", `couldn't parse image name "busybox:": invalid reference format`},
		{"a/" + strings.Repeat("b", 260), "must not be more than 255 characters"},
	} {
		err := imageNameError(tc.image)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.40s: %v, want no error", tc.image, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.40s: %v, want %q", tc.image, err, tc.want)
		}
	}
}

// TestInvalidImageNameNoCRICall: an image name that does not parse stops
// the container at InvalidImageName without ImageStatus or PullImage, as
// the kubelet's EnsureImageExists does.
func TestInvalidImageNameNoCRICall(t *testing.T) {
	b := parse(t, `apiVersion: v1
kind: Pod
metadata: {name: badname}
spec:
  containers:
  - name: app
    image: <your-private-image>
    command: ["sleep", "3600"]
`)
	e := runAll(t, b, newSim(t), testOptions(t))
	for _, s := range e.Steps() {
		for _, c := range s.Calls {
			if c.Method == "ImageStatus" || c.Method == "PullImage" {
				t.Errorf("step %s sent %s", s.Name, c.Method)
			}
		}
	}
	st := e.PodState()
	if len(st.Status.ContainerStatuses) != 1 || st.Status.ContainerStatuses[0].State.Waiting == nil ||
		st.Status.ContainerStatuses[0].State.Waiting.Reason != "InvalidImageName" {
		t.Fatalf("container status %+v, want waiting InvalidImageName", st.Status.ContainerStatuses)
	}
	if msg := st.Status.ContainerStatuses[0].State.Waiting.Message; !strings.HasPrefix(msg, `Failed to apply default image tag "<your-private-image>": couldn't parse image name`) {
		t.Errorf("message %q", msg)
	}
}
