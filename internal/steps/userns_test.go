package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

const usernsPod = `apiVersion: v1
kind: Pod
metadata: {name: userns}
spec:
  hostUsers: false
  %s
  containers:
  - {name: app, image: docker.io/library/busybox:1.35, command: [sleep, "3600"]}
`

// TestUserNamespaceRefused: a runtime handler that does not report
// features.user_namespaces (the simulated runtime's) gets the kubelet's
// refusal from generatePodSandboxConfig (GetOrCreateUserNamespaceMappings):
// CreatePodSandboxError, FailedCreatePodSandBox, and no RunPodSandbox sent.
func TestUserNamespaceRefused(t *testing.T) {
	for _, tc := range []struct{ name, extra, want string }{
		{"default handler", "", "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"RuntimeClass handler", "runtimeClassName: runc", "can't set `spec.hostUsers: false`, RuntimeClass handler \"runc\" does not support user namespaces"},
		{"unknown handler", "runtimeClassName: kata", "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces: the handler \"kata\" is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := runAll(t, parse(t, strings.Replace(usernsPod, "%s", tc.extra, 1)), newSim(t), testOptions(t))
			f, failed := e.Failed()
			if !failed || f.Name != "run-sandbox" || f.Result.Reason != reason.ErrCreatePodSandbox || f.Result.Message != tc.want {
				t.Fatalf("failed %t at %s: %s %q; want run-sandbox %s %q", failed, f.Name, f.Result.Reason, f.Result.Message, reason.ErrCreatePodSandbox, tc.want)
			}
			if len(f.Calls) != 0 {
				t.Errorf("run-sandbox sent %d call(s); the kubelet refuses before RunPodSandbox", len(f.Calls))
			}
			events := e.PodState().Events
			if len(events) == 0 || events[len(events)-1].Reason != reason.FailedCreatePodSandBox || events[len(events)-1].Message != "Failed to create pod sandbox: "+tc.want {
				t.Errorf("events %+v, want FailedCreatePodSandBox: Failed to create pod sandbox: %s", events, tc.want)
			}
			if err := e.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUserNamespacePlanned: the planned RunPodSandbox of a pod with
// hostUsers: false takes the first range no pod under the root dir records,
// and its containers' mounts carry the same mappings.
func TestUserNamespacePlanned(t *testing.T) {
	o := testOptions(t)
	other := filepath.Join(o.Config.RootDir, "pods", "other-uid")
	if err := os.MkdirAll(other, 0o750); err != nil {
		t.Fatal(err)
	}
	rec := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
	if err := os.WriteFile(filepath.Join(other, "userns"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	e := New(parse(t, strings.Replace(usernsPod, "%s", "", 1)), nil, o)
	seen := map[string]int{}
	for _, s := range e.Steps() {
		for _, r := range s.Requests {
			seen[r.Method]++
			var u *runtimeapi.UserNamespace
			switch m := r.Message.(type) {
			case *runtimeapi.RunPodSandboxRequest:
				u = m.Config.Linux.SecurityContext.NamespaceOptions.UsernsOptions
			case *runtimeapi.CreateContainerRequest:
				u = m.Config.Linux.SecurityContext.NamespaceOptions.UsernsOptions
				for _, mt := range m.Config.Mounts {
					if len(mt.UidMappings) != 1 || mt.UidMappings[0].HostId != 131072 {
						t.Errorf("mount %s: uid mappings %v, want the pod's (131072)", mt.ContainerPath, mt.UidMappings)
					}
				}
			default:
				continue
			}
			if u.Mode != runtimeapi.NamespaceMode_POD || len(u.Uids) != 1 || u.Uids[0].HostId != 131072 || u.Gids[0].HostId != 131072 || u.Uids[0].Length != 65536 {
				t.Errorf("%s: userns_options %v, want POD 0 → 131072, 65536 long", r.Method, u)
			}
		}
	}
	if seen["RunPodSandbox"] != 1 || seen["CreateContainer"] != 1 {
		t.Errorf("planned requests %v, want one RunPodSandbox and one CreateContainer", seen)
	}
}
