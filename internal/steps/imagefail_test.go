package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/reason"
)

// brokenImages is an image service whose ImageStatus fails.
type brokenImages struct {
	runtimeapi.UnimplementedImageServiceServer
}

func (brokenImages) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return nil, status.Error(codes.Unknown, "image store is corrupt")
}

// TestImageFailures checks what the kubelet reports when the image step
// fails before any pull: EnsureImageExists's reason (the container's
// Waiting reason), its own event, and startContainer's "Error: <reason>"
// event (pkg/kubelet/images/image_manager.go, kuberuntime_container.go).
func TestImageFailures(t *testing.T) {
	never := fmt.Sprintf(faultPod, `sim.podstep.dev/missing-image: "docker.io/library/absent:1"`, "docker.io/library/absent:1", "Never")
	cases := []struct {
		name    string
		pod     string
		client  func(t *testing.T) *cri.Client
		reason  string
		waiting string // the Waiting message
		events  []string
	}{
		{"ImageStatus fails", fmt.Sprintf(faultPod, `x: "y"`, "docker.io/library/nginx:1", "IfNotPresent"),
			func(t *testing.T) *cri.Client {
				return serveCRI(t, func(g *grpc.Server) { runtimeapi.RegisterImageServiceServer(g, brokenImages{}) })
			},
			reason.ErrImageInspect, `Failed to inspect image "": image store is corrupt`,
			[]string{`Warning InspectFailed Failed to inspect image "": image store is corrupt`, "Warning Failed Error: ImageInspectError"}},
		{"never pull, absent", never, newSim, reason.ErrImageNeverPull, `Container image "docker.io/library/absent:1" is not present with pull policy of Never`,
			[]string{`Warning ErrImageNeverPull Container image "docker.io/library/absent:1" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(parse(t, tc.pod), tc.client(t), testOptions(t))
			r := pullStep{name: "app"}.run(context.Background(), e)
			if r.Err == nil || r.Reason != tc.reason {
				t.Fatalf("reason %q (%v), want %s", r.Reason, r.Err, tc.reason)
			}
			st := e.PodState()
			var w *podstateWaiting
			for _, cs := range st.Status.ContainerStatuses {
				if cs.Name == "app" && cs.State.Waiting != nil {
					w = &podstateWaiting{cs.State.Waiting.Reason, cs.State.Waiting.Message}
				}
			}
			if w == nil || w.reason != tc.reason || w.message != tc.waiting {
				t.Errorf("app waiting %+v, want %s: %s", w, tc.reason, tc.waiting)
			}
			if got := eventLines(st.Events); strings.Join(got, "\n") != strings.Join(tc.events, "\n") {
				t.Errorf("events:\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(tc.events, "\n "))
			}
		})
	}
}

type podstateWaiting struct{ reason, message string }

func eventLines(evs []podstate.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
	}
	return out
}

// TestSandboxConfigFails checks a sandbox config the kubelet cannot build
// (here: the host's resolv.conf cannot be read) fails as createPodSandbox
// fails (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go): SyncPod's
// CreatePodSandboxError and its FailedCreatePodSandBox event.
func TestSandboxConfigFails(t *testing.T) {
	o := testOptions(t)
	o.Config.ResolvConf = filepath.Join(t.TempDir(), "absent-resolv.conf")
	e := runAll(t, load(t, repoFile("testdata/pods/hello.yaml")), newSim(t), o)
	defer teardown(t, e)
	f, failed := e.Failed()
	if !failed || f.Name != "run-sandbox" || f.Result.Reason != reason.ErrCreatePodSandbox {
		t.Fatalf("failed %v at %s with %s, want run-sandbox with CreatePodSandboxError", failed, f.Name, f.Result.Reason)
	}
	got := eventLines(e.PodState().Events)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning FailedCreatePodSandBox Failed to create pod sandbox: open resolv.conf: ") {
		t.Errorf("events %q, want one FailedCreatePodSandBox", got)
	}
}
