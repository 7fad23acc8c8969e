package steps

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

// TestImageVolumesStep runs testdata/pods/image-volume.yaml on the
// simulated runtime: the image-volumes step comes after sandbox-status and
// before the container's image (getImageVolumes in SyncPod's lazyStart),
// asks ImageStatus of the volume's image (IfNotPresent, present: no pull),
// and the container's CreateContainer mounts the image by its ID, the
// subPath as image_sub_path.
func TestImageVolumesStep(t *testing.T) {
	c := newSim(t)
	e := runAll(t, load(t, repoFile("testdata/pods/image-volume.yaml")), c, testOptions(t))
	if f, failed := e.Failed(); failed {
		t.Fatalf("failed at %s: %s %s", f.Name, f.Result.Reason, f.Result.Message)
	}
	var names []string
	var iv, create Step
	for _, s := range e.Steps() {
		names = append(names, s.Name)
		switch s.Kind {
		case KindImageVolumes:
			iv = s
		case KindCreate:
			create = s
		}
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "sandbox-status image-volumes pull/app create/app") {
		t.Errorf("steps %s: want image-volumes between sandbox-status and pull/app", got)
	}
	if got := strings.Join(methods(iv.Calls), ","); got != "ImageStatus" {
		t.Errorf("image-volumes calls %s, want ImageStatus", got)
	}
	var cfg *runtimeapi.ContainerConfig
	for _, call := range create.Calls {
		if req, ok := call.Request.(*runtimeapi.CreateContainerRequest); ok {
			cfg = req.Config
		}
	}
	if cfg == nil {
		t.Fatal("no CreateContainer")
	}
	subs := map[string]string{}
	for _, m := range cfg.Mounts {
		if m.Image != nil {
			if !strings.HasPrefix(m.Image.Image, "sha256:") || m.Image.UserSpecifiedImage != "docker.io/library/busybox:1.35" || m.HostPath != "" || !m.Readonly {
				t.Errorf("mount %s: %v, want the image by ID, no host path, read-only", m.ContainerPath, m)
			}
			subs[m.ContainerPath] = m.ImageSubPath
		}
	}
	if len(subs) != 2 || subs["/image"] != "" || subs["/www"] != "var/www" {
		t.Errorf("image mounts (path → image_sub_path) %v, want /image → \"\", /www → var/www", subs)
	}
}

// TestImageVolumePullFails: a volume image the runtime cannot pull is
// ErrImagePull at image-volumes, and the container mounting the volume
// waits with ErrImagePull (toKubeContainerImageVolumes).
func TestImageVolumePullFails(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: iv
  annotations: {sim.podstep.dev/pull-error: "docker.io/library/tools:1=401 Unauthorized"}
spec:
  volumes: [{name: tools, image: {reference: "docker.io/library/tools:1", pullPolicy: Always}}]
  containers:
  - {name: app, image: docker.io/library/busybox:1.35, volumeMounts: [{name: tools, mountPath: /tools}]}
`
	e := runAll(t, parse(t, pod), newSim(t), testOptions(t))
	f, failed := e.Failed()
	if !failed || f.Kind != KindImageVolumes || f.Result.Reason != reason.ErrImagePull || !strings.Contains(f.Result.Message, "401 Unauthorized") {
		t.Fatalf("failed %t at %s: %s %q; want image-volumes ErrImagePull with the runtime's error", failed, f.Name, f.Result.Reason, f.Result.Message)
	}
	st := e.PodState()
	if got := st.Status.ContainerStatuses[0].State.Waiting; got == nil || got.Reason != reason.ErrImagePull {
		t.Errorf("app waiting %v, want ErrImagePull", got)
	}
}
