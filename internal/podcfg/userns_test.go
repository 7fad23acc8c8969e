package podcfg

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestFirstFreeUserNamespace(t *testing.T) {
	for _, tc := range []struct {
		name string
		used []uint32
		want uint32
	}{
		{"none used: the first range after the host's own 0-65535", nil, 65536},
		{"first taken", []uint32{65536}, 131072},
		{"a hole", []uint32{65536, 196608}, 131072},
		{"unordered", []uint32{131072, 65536}, 196608},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FirstFreeUserNamespace(tc.used)
			if err != nil || got != tc.want {
				t.Errorf("FirstFreeUserNamespace(%v) = %d, %v; want %d", tc.used, got, err, tc.want)
			}
		})
	}
	all := make([]uint32, 0, 65535)
	for i := uint64(1); i < 65536; i++ {
		all = append(all, uint32(i*UserNamespaceIDs))
	}
	if got, err := FirstFreeUserNamespace(all); err == nil {
		t.Errorf("every range used: got %d, want the kubelet's error", got)
	}
}

func TestParseUserNamespace(t *testing.T) {
	good := `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`
	r, err := ParseUserNamespace([]byte(good))
	if err != nil || r.UIDMappings[0].HostID != 131072 {
		t.Fatalf("ParseUserNamespace(good) = %+v, %v", r, err)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", `{`, "user namespace record"},
		{"two uid mappings", `{"uidMappings":[{"hostId":65536,"length":65536},{"hostId":131072,"length":65536}],"gidMappings":[{"hostId":65536,"length":65536}]}`, "want one uid and one gid mapping"},
		{"uid and gid differ", `{"uidMappings":[{"hostId":65536,"length":65536}],"gidMappings":[{"hostId":131072,"length":65536}]}`, "differ"},
		{"not aligned", `{"uidMappings":[{"hostId":65537,"length":65536}],"gidMappings":[{"hostId":65537,"length":65536}]}`, "multiple of 65536"},
		{"container ID not 0", `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`, "container ID 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseUserNamespace([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseUserNamespace = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestUserNamespaceConfigs: the sandbox's namespace options and every
// container mount, for hostUsers unset, true and false (with mappings).
func TestUserNamespaceConfigs(t *testing.T) {
	mapped := NewUserNamespace(131072).CRI()
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		hostUsers *bool
		opt       *runtimeapi.UserNamespace
		wantMode  runtimeapi.NamespaceMode
		wantHost  uint32 // of the mappings; 0 = none
		wantErr   string
	}{
		{name: "hostUsers unset: the node's (NODE, sent to every pod in v1.37)", wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "hostUsers true", hostUsers: &yes, opt: mapped, wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "hostUsers false: POD with the mappings", hostUsers: &no, opt: mapped, wantMode: runtimeapi.NamespaceMode_POD, wantHost: 131072},
		{name: "hostUsers false without mappings", hostUsers: &no, wantErr: "no user namespace mappings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-1"
			pod.Spec.HostUsers = tc.hostUsers
			pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox", TerminationMessagePath: "/dev/termination-log"}}
			defaultPod(pod)
			o := Options{RootDir: t.TempDir(), ResolvConf: writeResolvConf(t, "nameserver 10.0.0.10\n"), UserNamespace: tc.opt}
			sb, _, err := SandboxConfig(pod, 0, o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("SandboxConfig error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
			if u.GetMode() != tc.wantMode {
				t.Errorf("sandbox userns mode = %v, want %v", u.GetMode(), tc.wantMode)
			}
			hostOf := func(ms []*runtimeapi.IDMapping) uint32 {
				if len(ms) != 1 || ms[0].ContainerId != 0 || ms[0].Length != UserNamespaceIDs {
					return 0
				}
				return ms[0].HostId
			}
			if tc.wantHost != 0 && (hostOf(u.Uids) != tc.wantHost || hostOf(u.Gids) != tc.wantHost) {
				t.Errorf("sandbox mappings uids %v gids %v, want 0 → %d, 65536 long", u.Uids, u.Gids, tc.wantHost)
			}
			cfg, err := ContainerConfig(pod, sb, ContainerInput{Container: &pod.Spec.Containers[0], PodIP: "10.0.0.2",
				EtcHostsPath: "/x/etc-hosts", TerminationLogPath: "/x/termination-log"}, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Linux.SecurityContext.NamespaceOptions.GetUsernsOptions().GetMode(); got != tc.wantMode {
				t.Errorf("container userns mode = %v, want the sandbox's %v", got, tc.wantMode)
			}
			if len(cfg.Mounts) != 2 {
				t.Fatalf("mounts = %v, want /etc/hosts and the termination log", cfg.Mounts)
			}
			for _, m := range cfg.Mounts {
				if got := hostOf(m.UidMappings); got != tc.wantHost || hostOf(m.GidMappings) != tc.wantHost {
					t.Errorf("mount %s: mappings uid %v gid %v, want host %d (0 = none)", m.ContainerPath, m.UidMappings, m.GidMappings, tc.wantHost)
				}
			}
		})
	}
}
