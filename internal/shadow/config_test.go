package shadow

import (
	"slices"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// The harness's configs (hack/lib/harness-config.sh), as a node would have them.
const node16 = `version = 2
root = "/var/lib/node/root"
state = "/run/node/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "/run/node/containerd.sock"
  tcp_address = "0.0.0.0:1234"
[ttrpc]
  address = "/run/node/containerd.sock.ttrpc"
[debug]
  address = "/run/node/debug.sock"
[metrics]
  address = "127.0.0.1:1338"
[cgroup]
  path = "/system.slice/containerd"
[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/containerd"
[plugins."io.containerd.snapshotter.v1.overlayfs"]
  root_path = "/data/overlay"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
  stream_server_address = "0.0.0.0"
  stream_server_port = "10010"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
        BinaryName = "/usr/local/sbin/runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
      runtime_type = "io.containerd.kata.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/node/cni"
    conf_template = "/etc/node/template"
`

const node2 = `version = 3
root = "/var/lib/node2"
state = "/run/node2"
imports = ["/etc/containerd/conf.d/*.toml"]
[grpc]
  address = "/run/node2/containerd.sock"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "registry.k8s.io/pause:3.10"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "crun"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun.options]
        BinaryName = "/usr/bin/crun"
        Root = "/run/crun"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/opt/cni/bin", "/usr/lib/cni"]
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_port = "10010"
`

func get(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not a table", strings.Join(path, "."), cur)
		}
		cur = mm[p]
	}
	return cur
}

func TestDerive(t *testing.T) {
	l := Layout{Dir: "/var/lib/podstep/shadows/abcd"}
	type want struct {
		path  []string
		value any
	}
	cri2 := []string{"plugins", criV2}
	rt3 := []string{"plugins", criRuntime3}
	tests := []struct {
		name    string
		node    string
		major   int
		version int64
		confDir string
		binDirs []string
		sandbox string
		diffs   []string
		want    []want
	}{
		{name: "containerd 1.6, config version 2", node: node16, major: 1, version: 2, confDir: "/etc/node/cni", binDirs: []string{"/usr/lib/cni"},
			sandbox: "registry.k8s.io/pause:3.6", diffs: []string{"conf_template"},
			want: []want{
				{[]string{"root"}, l.Root()}, {[]string{"state"}, l.State()},
				{[]string{"grpc", "address"}, l.Socket()}, {[]string{"grpc", "tcp_address"}, nil},
				{[]string{"ttrpc", "address"}, l.TTRPC()},
				{[]string{"debug", "address"}, ""}, {[]string{"metrics", "address"}, ""},
				{[]string{"cgroup", "path"}, nil},
				{[]string{"plugins", optPlugin, "path"}, l.Dir + "/opt"},
				{[]string{"plugins", "io.containerd.snapshotter.v1.overlayfs", "root_path"}, l.Dir + "/root/io.containerd.snapshotter.v1.overlayfs"},
				{append(cri2, "stream_server_address"), "127.0.0.1"}, {append(cri2, "stream_server_port"), "0"},
				{append(cri2, "netns_mounts_under_state_dir"), true},
				{append(cri2, "sandbox_image"), "registry.k8s.io/pause:3.6"},
				{append(cri2, "cni", "conf_dir"), l.CNIConfDir()}, {append(cri2, "cni", "bin_dir"), "/usr/lib/cni"},
				{append(cri2, "cni", "conf_template"), nil},
				{append(cri2, "containerd", "default_runtime_name"), "runc"},
				{append(cri2, "containerd", "runtimes", "runc", "options", "Root"), l.Dir + "/runc/runc"},
				{append(cri2, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), true},
				{append(cri2, "containerd", "runtimes", "runc", "options", "BinaryName"), "/usr/local/sbin/runc"},
				{append(cri2, "containerd", "runtimes", "kata", "runtime_type"), "io.containerd.kata.v2"},
				{append(cri2, "containerd", "runtimes", "kata", "options"), nil},
			}},
		{name: "containerd 2.x, config version 3", node: node2, major: 2, version: 3, confDir: "/etc/cni/net.d", binDirs: []string{"/opt/cni/bin", "/usr/lib/cni"},
			sandbox: "registry.k8s.io/pause:3.10", diffs: []string{"imported files"},
			want: []want{
				{[]string{"imports"}, []any{}},
				{[]string{"grpc", "address"}, l.Socket()},
				{[]string{"plugins", criV2, "stream_server_address"}, "127.0.0.1"},
				{[]string{"plugins", criV2, "stream_server_port"}, "0"},
				{append(rt3, "netns_mounts_under_state_dir"), true},
				{append(rt3, "enable_selinux"), false},
				{append(rt3, "cni", "conf_dir"), l.CNIConfDir()},
				{append(rt3, "containerd", "runtimes", "crun", "options", "Root"), l.Dir + "/runc/crun"},
				{append(rt3, "containerd", "runtimes", "crun", "options", "BinaryName"), "/usr/bin/crun"},
				{[]string{"plugins", criImages3, "pinned_images", "sandbox"}, "registry.k8s.io/pause:3.10"},
			}},
		{name: "no config, containerd 1.x", major: 1, version: 2, confDir: "/etc/cni/net.d", binDirs: []string{"/opt/cni/bin"},
			want: []want{
				{append(cri2, "containerd", "runtimes", "runc", "options", "Root"), l.Dir + "/runc/runc"},
				{append(cri2, "cni", "conf_dir"), l.CNIConfDir()},
			}},
		{name: "no config, containerd 2.x", major: 2, version: 3, confDir: "/etc/cni/net.d", binDirs: []string{"/opt/cni/bin"},
			want: []want{
				{append(rt3, "containerd", "runtimes", "runc", "options", "Root"), l.Dir + "/runc/runc"},
				{append(rt3, "cni", "conf_dir"), l.CNIConfDir()},
				{[]string{"plugins", criV2, "stream_server_port"}, "0"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, d, err := Derive([]byte(tt.node), tt.major, l)
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]any{}
			if err := toml.Unmarshal(out, &m); err != nil {
				t.Fatalf("the derived config is not TOML: %v\n%s", err, out)
			}
			if d.Version != tt.version || m["version"] != tt.version {
				t.Errorf("version %d (in file %v), want %d", d.Version, m["version"], tt.version)
			}
			if d.CNIConfDir != tt.confDir || strings.Join(d.CNIBinDirs, ",") != strings.Join(tt.binDirs, ",") || d.SandboxImage != tt.sandbox {
				t.Errorf("read conf dir %q, bin dirs %q, sandbox image %q; want %q, %q, %q", d.CNIConfDir, d.CNIBinDirs, d.SandboxImage, tt.confDir, tt.binDirs, tt.sandbox)
			}
			if dp, _ := m["disabled_plugins"].([]any); !slices.Contains(dp, any(nriPlugin)) {
				t.Errorf("NRI not disabled:\n%s", out)
			}
			for _, w := range tt.want {
				got := get(t, m, w.path...)
				if gs, ws := toString(got), toString(w.value); gs != ws {
					t.Errorf("%s = %s, want %s", strings.Join(w.path, "."), gs, ws)
				}
			}
			for _, diff := range tt.diffs {
				if !strings.Contains(strings.Join(d.Differences, "\n"), diff) {
					t.Errorf("differences %q: want one about %q", d.Differences, diff)
				}
			}
			// Every path of the node's is gone from the derived config.
			for _, p := range []string{"/var/lib/node", "/run/node", "/opt/containerd", "/data/overlay", "0.0.0.0", "/etc/node/cni\"", "/run/crun"} {
				if strings.Contains(string(out), p) {
					t.Errorf("the derived config still names the node's %s:\n%s", p, out)
				}
			}
		})
	}
}

func toString(v any) string {
	b, _ := toml.Marshal(map[string]any{"v": v})
	if v == nil {
		return "<none>"
	}
	return strings.TrimSpace(string(b))
}

func TestDeriveRefuses(t *testing.T) {
	for _, tt := range []struct{ name, node, want string }{
		{"version 1", "root = \"/x\"\n", "no version"},
		{"version 4", "version = 4\n", "version 4"},
		{"not TOML", "version = = 2", "read the node's containerd config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Derive([]byte(tt.node), 1, Layout{Dir: "/d"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for _, tt := range []struct {
		out, version string
		major        int
	}{
		{"containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n", "1.6.20~ds1", 1},
		{"containerd github.com/containerd/containerd/v2 v2.4.2 abcdef\n", "v2.4.2", 2},
		{"containerd containerd.io 1.7.27 05044ec0a9a\n", "", 0},
	} {
		v, major, err := parseVersion(tt.out)
		if v != tt.version || major != tt.major || (tt.version == "") != (err != nil) {
			t.Errorf("parseVersion(%q) = %q, %d, %v; want %q, %d", tt.out, v, major, err, tt.version, tt.major)
		}
	}
}
