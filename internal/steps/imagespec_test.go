package steps

import (
	"maps"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/podcfg"
)

// TestImageSpecsMatchKubeletTrace: before each CreateContainer the kubelet
// trace shows two ImageStatus calls. The first, the image manager's
// presence check (EnsureImageExists → ToRuntimeAPIImageSpec), carries the
// pod's annotations, the static pod's kubernetes.io/config.* included; the
// second, getImageUser's, the image alone. Neither sets
// user_specified_image (only CreateContainer's ImageSpec does). The pod
// gets an annotation of its own so that the manifest's annotations count.
func TestImageSpecsMatchKubeletTrace(t *testing.T) {
	for _, name := range []string{"simple", "init"} {
		t.Run(name, func(t *testing.T) {
			b := load(t, repoFile("testdata/kubelet-traces/"+name+".yaml"))
			b.Pod.Annotations = map[string]string{"example.com/team": "node"}
			c := newSim(t)
			o := testOptions(t)
			e := runAll(t, b, c, o)
			if f, failed := e.Failed(); failed {
				t.Fatalf("step %s failed: %s", f.Name, f.Result.Message)
			}
			var sandbox *runtimeapi.PodSandboxConfig
			var statuses []*runtimeapi.ImageSpec
			creates := 0
			for _, call := range c.Calls() {
				switch r := call.Request.(type) {
				case *runtimeapi.RunPodSandboxRequest:
					sandbox = r.GetConfig()
				case *runtimeapi.ImageStatusRequest:
					statuses = append(statuses, r.GetImage())
				case *runtimeapi.CreateContainerRequest:
					creates++
					ctr := r.GetConfig().GetMetadata().GetName()
					if len(statuses) != 2 {
						t.Fatalf("%s: %d ImageStatus calls before CreateContainer, want 2 as in the trace", ctr, len(statuses))
					}
					want := map[string]string{"example.com/team": "node"}
					for _, k := range []string{podcfg.AnnotationConfigHash, podcfg.AnnotationConfigSeen, podcfg.AnnotationConfigSource} {
						want[k] = sandbox.GetAnnotations()[k]
					}
					if want[podcfg.AnnotationConfigSource] != "file" {
						t.Fatalf("sandbox annotations %v lack config.source", sandbox.GetAnnotations())
					}
					if got := statuses[0].GetAnnotations(); !maps.Equal(got, want) {
						t.Errorf("%s: first ImageStatus annotations = %v, want the pod's %v", ctr, got, want)
					}
					if got := statuses[1].GetAnnotations(); len(got) != 0 {
						t.Errorf("%s: second ImageStatus (getImageUser) annotations = %v, want none", ctr, got)
					}
					for i, s := range statuses {
						if s.GetImage() != "docker.io/library/busybox:latest" || s.GetUserSpecifiedImage() != "" {
							t.Errorf("%s: ImageStatus %d image = %q, user_specified_image %q; want the manifest's image, no user_specified_image",
								ctr, i+1, s.GetImage(), s.GetUserSpecifiedImage())
						}
					}
					statuses = nil
				}
			}
			if creates == 0 {
				t.Fatal("no CreateContainer sent")
			}
		})
	}
}
