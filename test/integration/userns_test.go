//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// needsContainerd2 are the pods of testdata/pods a containerd 1.x cannot
// run, and why; TestAllPods asserts their failure there (their own tests
// assert which).
var needsContainerd2 = map[string]string{
	"image-volume": "no CRI Mount.image before containerd 2.1",
	"userns":       "no runtime handler reports user namespaces",
}

// TestUserNamespaces runs testdata/pods/userns.yaml (hostUsers: false)
// through the binary. On containerd 2.x (runc >= 1.2, whose handler reports
// features.user_namespaces) the pod runs in its own user namespace: the
// RunPodSandbox request carries userns_options mode POD with the kubelet's
// mapping (65536 IDs from the first free range), every container mount
// carries the same mappings, the container sees them in /proc/self/uid_map
// and gid_map, root in the pod is uid 65536 on the host, and the mapping is
// recorded in the pod dir's userns file. A second pod, with the first range
// taken by a pod under the same root dir, gets the next range. On containerd
// 1.6, which reports no runtime handlers in Status, the pod is refused before
// RunPodSandbox, with the kubelet's message.
func TestUserNamespaces(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	if e.rt.major < 2 {
		t.Logf("%s: Status reports no runtime handlers, so the kubelet (HandlerSupportsUserNamespaces) refuses hostUsers: false; asserting the refusal", e.rt)
		r := e.run(t, d, e.pod("userns"))
		if r.code != 1 || r.summary.Failure == nil {
			t.Fatalf("want exit 1 with a failure\n%s", r)
		}
		f := r.summary.Failure
		const want = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if f.Step != "run-sandbox" || f.Reason != "CreatePodSandboxError" || !strings.Contains(f.Message, want) {
			t.Errorf("failure = %+v, want run-sandbox CreatePodSandboxError %q\n%s", f, want, r)
		}
		for _, s := range r.steps {
			for _, c := range s.Calls {
				if c.Method == "RunPodSandbox" {
					t.Errorf("step %s sent RunPodSandbox; the kubelet refuses before it", s.Name)
				}
			}
		}
		if v := valueOf(r.step("runtime-status"), "user namespaces"); !strings.Contains(v, "no runtime handlers") {
			t.Errorf("runtime-status detail \"user namespaces\" = %q, want it to say the runtime lists no handlers", v)
		}
		return
	}

	t.Run("first range", func(t *testing.T) { checkUserns(t, e, d, 65536) })
	t.Run("next free range", func(t *testing.T) {
		d := newDirs(t)
		// A pod under the same root dir holds 65536-131071 (as a kubelet
		// restarting reads it: recordPodMappings).
		other := filepath.Join(d.root, "pods", "11111111-2222-3333-4444-555555555555")
		if err := os.MkdirAll(other, 0o750); err != nil {
			t.Fatal(err)
		}
		rec := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
		if err := os.WriteFile(filepath.Join(other, "userns"), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		checkUserns(t, e, d, 131072)
	})
}

func checkUserns(t *testing.T, e *env, d dirs, first uint32) {
	r := e.mustRun(t, d, e.pod("userns"), "--keep")
	t.Cleanup(func() { e.cleanup(t) })
	uid := r.summary.UID

	// The request, as sent.
	var req struct {
		Config struct {
			Linux struct {
				SecurityContext struct {
					NamespaceOptions struct {
						UsernsOptions struct {
							Mode string `json:"mode"`
							Uids []struct {
								HostID      uint32 `json:"host_id"`
								ContainerID uint32 `json:"container_id"`
								Length      uint32 `json:"length"`
							} `json:"uids"`
							Gids []json.RawMessage `json:"gids"`
						} `json:"userns_options"`
					} `json:"namespace_options"`
				} `json:"security_context"`
			} `json:"linux"`
		} `json:"config"`
	}
	sb := r.step("run-sandbox")
	if sb == nil || len(sb.Calls) != 1 {
		t.Fatalf("no run-sandbox step with one call\n%s", r)
	}
	if err := json.Unmarshal(sb.Calls[0].Request, &req); err != nil {
		t.Fatalf("RunPodSandbox request: %v", err)
	}
	u := req.Config.Linux.SecurityContext.NamespaceOptions.UsernsOptions
	// mode POD is the enum's zero: protojson leaves it out.
	if (u.Mode != "" && u.Mode != "POD") || len(u.Uids) != 1 || len(u.Gids) != 1 || u.Uids[0].HostID != first || u.Uids[0].ContainerID != 0 || u.Uids[0].Length != 65536 {
		t.Errorf("RunPodSandbox userns_options = %+v, want mode POD, one uid and gid mapping 0 → %d, 65536 long", u, first)
	}
	// Every mount of the container carries the mappings.
	create := r.step("create/app")
	if create == nil {
		t.Fatalf("no create/app step\n%s", r)
	}
	for _, c := range create.Calls {
		if c.Method != "CreateContainer" {
			continue
		}
		var raw struct {
			Config struct {
				Mounts []struct {
					ContainerPath string            `json:"container_path"`
					UIDMappings   []json.RawMessage `json:"uidMappings"` // the field's name in api.proto
				} `json:"mounts"`
			} `json:"config"`
		}
		if err := json.Unmarshal(c.Request, &raw); err != nil {
			t.Fatalf("CreateContainer request: %v", err)
		}
		if len(raw.Config.Mounts) == 0 {
			t.Errorf("CreateContainer has no mounts")
		}
		for _, m := range raw.Config.Mounts {
			if len(m.UIDMappings) != 1 {
				t.Errorf("mount %s: uidMappings = %d entries, want the pod's one", m.ContainerPath, len(m.UIDMappings))
			}
		}
	}

	// What the container sees, and what the host sees.
	c := dialCRI(t, e.endpoint)
	app := c.running(t, uid, "app")
	want := []string{"0", u32(first), "65536"}
	for _, f := range []string{"/proc/self/uid_map", "/proc/self/gid_map"} {
		if got := strings.Fields(c.exec(t, app.Id, "cat", f)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s in the container = %q, want %q", f, got, want)
		}
	}
	if got := strings.TrimSpace(c.exec(t, app.Id, "id", "-u")); got != "0" {
		t.Errorf("id -u in the container = %q, want 0 (root in its own namespace)", got)
	}
	st, err := c.rt.ContainerStatus(ctx10(t), &runtimeapi.ContainerStatusRequest{ContainerId: app.Id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("ContainerStatus verbose info: pid %d (%v)", info.Pid, err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(info.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != u32(first) {
				t.Errorf("the container's process on the host: %q, want uid %d", line, first)
			}
		}
	}
	// The kubelet's record of the range, in the pod dir.
	data, err := os.ReadFile(filepath.Join(d.podDir(uid), "userns"))
	if err != nil {
		t.Fatalf("the pod dir's userns record: %v", err)
	}
	wantRec := `{"uidMappings":[{"hostId":` + u32(first) + `,"containerId":0,"length":65536}],"gidMappings":[{"hostId":` + u32(first) + `,"containerId":0,"length":65536}]}`
	if string(data) != wantRec {
		t.Errorf("userns record = %s, want %s", data, wantRec)
	}
	if v := valueOf(r.step("runtime-status"), "user namespaces"); !strings.Contains(v, "features.user_namespaces=true") {
		t.Errorf("runtime-status detail \"user namespaces\" = %q, want the handler's features.user_namespaces=true", v)
	}
}

func u32(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
