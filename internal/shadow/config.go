package shadow

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	toml "github.com/pelletier/go-toml/v2"
)

// StateBase is where the shadows' containerd state dirs are (one per
// shadow, named by its ID), as the node's is /run/containerd: not under
// Dir, because a container in a user namespace (hostUsers: false) must
// reach its rootfs, mounted under the state dir, through every dir above
// it as an unprivileged uid (runc's remount of it fails with EACCES
// under podstep's 0750 dir): StateBase is 0711, so is containerd's state
// dir in it.
const StateBase = "/run/podstep-shadows"

// Layout is where a shadow keeps its files, all under Dir but its
// containerd's state dir (State).
type Layout struct {
	Dir string
}

// Root and the other paths of a shadow, under its Dir.
func (l Layout) Root() string       { return filepath.Join(l.Dir, "root") }
func (l Layout) State() string      { return filepath.Join(StateBase, filepath.Base(l.Dir)) }
func (l Layout) Socket() string     { return filepath.Join(l.Dir, "run", "containerd.sock") }
func (l Layout) TTRPC() string      { return filepath.Join(l.Dir, "run", "containerd.sock.ttrpc") }
func (l Layout) Config() string     { return filepath.Join(l.Dir, "config.toml") }
func (l Layout) CNIConfDir() string { return filepath.Join(l.Dir, "cni") }
func (l Layout) CNIData() string    { return filepath.Join(l.Dir, "cni-data") }
func (l Layout) Log() string        { return filepath.Join(l.Dir, "containerd.log") }
func (l Layout) Marker() string     { return filepath.Join(l.Dir, MarkerFile) }

// Derived is what Derive read from the node's config and changed.
type Derived struct {
	Version int64 // the config's version: 2 (containerd 1.x) or 3 (2.x)
	// CNIConfDir and CNIBinDirs are the node's (containerd's defaults when
	// its config names none); the shadow uses the same bin dirs.
	CNIConfDir string
	CNIBinDirs []string
	// SandboxImage is the node's pause image ("" for containerd's default).
	SandboxImage string
	// Differences are what the shadow does not keep of the node's config,
	// for the steps to say.
	Differences []string
}

// The CRI plugins' tables: config version 2 has one, 3 splits it.
const (
	criV2       = "io.containerd.grpc.v1.cri"
	criRuntime3 = "io.containerd.cri.v1.runtime"
	criImages3  = "io.containerd.cri.v1.images"
	nriPlugin   = "io.containerd.nri.v1.nri"
	optPlugin   = "io.containerd.internal.v1.opt"
)

// Derive makes the shadow's config from the node's (nil: containerd's
// defaults, for a binary of major version major), with only the paths
// changed: root, state, the gRPC and ttrpc sockets under l.Dir; no debug or
// metrics listener; the CRI streaming server on 127.0.0.1, a port of the
// kernel's choice; NRI off; no imported files; each runc runtime's state
// root and every plugin root_path under l.Dir; network namespaces under the
// state dir; the CNI conf dir l.CNIConfDir(). The runtimes, handlers,
// snapshotter, registry settings and CNI bin dirs stay the node's.
func Derive(node []byte, major int, l Layout) ([]byte, Derived, error) {
	m := map[string]any{}
	if len(node) > 0 {
		if err := toml.Unmarshal(node, &m); err != nil {
			return nil, Derived{}, fmt.Errorf("read the node's containerd config: %w", err)
		}
	}
	var d Derived
	switch v := m["version"].(type) {
	case nil:
		if len(node) > 0 {
			return nil, d, fmt.Errorf("the node's containerd config has no version (version 1, containerd 1.4 and older): a shadow is made of config version 2 (containerd 1.x) or 3 (2.x)")
		}
		d.Version = 2
		if major >= 2 {
			d.Version = 3
		}
	case int64:
		d.Version = v
	default:
		return nil, d, fmt.Errorf("the node's containerd config: version = %v: expected 2 or 3", v)
	}
	if d.Version != 2 && d.Version != 3 {
		return nil, d, fmt.Errorf("the node's containerd config has version %d: a shadow is made of config version 2 (containerd 1.x) or 3 (2.x)", d.Version)
	}
	m["version"] = d.Version
	m["root"], m["state"] = l.Root(), l.State()
	if imp, ok := m["imports"].([]any); ok && len(imp) > 0 {
		d.Differences = append(d.Differences, fmt.Sprintf("config: the node's imported files (%v) are not read", imp))
	}
	m["imports"] = []any{}
	if _, ok := m["proxy_plugins"]; ok {
		delete(m, "proxy_plugins")
		d.Differences = append(d.Differences, "config: the node's proxy plugins (external snapshotters) are left out")
	}
	table(m, "grpc")["address"] = l.Socket()
	delete(table(m, "grpc"), "tcp_address")
	table(m, "ttrpc")["address"] = l.TTRPC()
	table(m, "debug")["address"] = ""
	table(m, "metrics")["address"] = ""
	if cg, ok := m["cgroup"].(map[string]any); ok {
		delete(cg, "path") // the node's daemon cgroup is the node's
	}
	disabled, _ := m["disabled_plugins"].([]any)
	if !slices.Contains(disabled, any(nriPlugin)) {
		disabled = append(disabled, nriPlugin)
	}
	m["disabled_plugins"] = disabled
	plugins := table(m, "plugins")
	for name, p := range plugins {
		if pt, ok := p.(map[string]any); ok {
			if _, ok := pt["root_path"]; ok {
				// Under root (containerd's own default place for it), so
				// that a plugin's data (a snapshotter's) goes with the root
				// into the image cache (cache.go).
				pt["root_path"] = filepath.Join(l.Root(), name)
			}
		}
	}
	table(plugins, optPlugin)["path"] = filepath.Join(l.Dir, "opt")

	grpcCRI := table(plugins, criV2)
	runtimeCRI, imagesCRI := grpcCRI, grpcCRI
	if d.Version == 3 {
		runtimeCRI, imagesCRI = table(plugins, criRuntime3), table(plugins, criImages3)
	}
	grpcCRI["stream_server_address"] = "127.0.0.1"
	grpcCRI["stream_server_port"] = "0"
	runtimeCRI["netns_mounts_under_state_dir"] = true
	if d.Version == 3 {
		d.SandboxImage, _ = table(imagesCRI, "pinned_images")["sandbox"].(string)
	} else {
		d.SandboxImage, _ = imagesCRI["sandbox_image"].(string)
	}

	cni := table(runtimeCRI, "cni")
	d.CNIConfDir, _ = cni["conf_dir"].(string)
	if d.CNIConfDir == "" {
		d.CNIConfDir = "/etc/cni/net.d"
	}
	if dirs, ok := cni["bin_dirs"].([]any); ok {
		for _, b := range dirs {
			if s, ok := b.(string); ok {
				d.CNIBinDirs = append(d.CNIBinDirs, s)
			}
		}
	}
	if b, ok := cni["bin_dir"].(string); ok && b != "" {
		d.CNIBinDirs = append(d.CNIBinDirs, b)
	}
	if len(d.CNIBinDirs) == 0 {
		d.CNIBinDirs = []string{"/opt/cni/bin"}
	}
	cni["conf_dir"] = l.CNIConfDir()
	cni["max_conf_num"] = int64(1)
	if _, ok := cni["conf_template"]; ok {
		delete(cni, "conf_template")
		d.Differences = append(d.Differences, "config: the node's CNI conf_template is not used")
	}

	// Each runc runtime's state root under the shadow's dir (runc's default,
	// /run/containerd/runc, is the node's).
	runtimes := table(table(runtimeCRI, "containerd"), "runtimes")
	names := make([]string, 0, len(runtimes))
	for n := range runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		// containerd's default runtime, "runc", made explicit to give it a root.
		runtimes["runc"] = map[string]any{"runtime_type": "io.containerd.runc.v2"}
		names = []string{"runc"}
	}
	for _, n := range names {
		rt, ok := runtimes[n].(map[string]any)
		if !ok {
			continue
		}
		if typ, _ := rt["runtime_type"].(string); typ == "io.containerd.runc.v2" || typ == "" {
			table(rt, "options")["Root"] = filepath.Join(l.Dir, "runc", n)
		}
	}
	out, err := toml.Marshal(m)
	if err != nil {
		return nil, d, fmt.Errorf("write the shadow's containerd config: %w", err)
	}
	return append([]byte("# podstep shadow runtime: the node's containerd config with its paths changed. Generated; removed with the shadow.\n"), out...), d, nil
}

// table is m[key] as a table, made when missing.
func table(m map[string]any, key string) map[string]any {
	if t, ok := m[key].(map[string]any); ok {
		return t
	}
	t := map[string]any{}
	m[key] = t
	return t
}
