// Package bundle gathers what a runtime maintainer asks for in a bug report
// about a pod that would not start (`podstep bundle`): the recording of the
// pod's calls, the runtime's version, status and effective config (its
// credentials masked), its pods and containers, the CNI configs and the
// host-local IPAM state, the host's kernel and disk, and, when a cluster
// is reachable, the pod, its events and its kubelet's configz. Everything
// goes into one tar.gz with a README.txt saying what is inside, what was
// masked and what could not be read. Nothing secret is written: values
// under password, auth, token and secret keys are masked, and a recording
// is already redacted when podstep writes it.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/cri"
)

// Options say what to gather.
type Options struct {
	// Recording is a recording of the pod's calls (run --record, proxy
	// --record-dir); "" for none.
	Recording string
	// Runtime is the runtime to describe; nil for none.
	Runtime *cri.Client
	// Endpoint names the runtime in the README.
	Endpoint string
	// CNIConfDir overrides the CNI conf dir the runtime reports ("": the
	// runtime's, else /etc/cni/net.d).
	CNIConfDir string
	// API and Namespace/Pod: the pod, its events and its node's configz
	// (nil API: no cluster part).
	API            kube.API
	Namespace, Pod string
	// Version is podstep's version, for the README.
	Version string
	// Now is the bundle's time (nil: time.Now).
	Now func() time.Time
	// MaxFile bounds each file read from disk (0: 4 MiB).
	MaxFile int64
}

// Result says what went into the bundle.
type Result struct {
	// Files are the paths inside the bundle, in order.
	Files []string
	// Missing say what could not be gathered, and why.
	Missing []string
	// Masked counts the values masked.
	Masked int
}

type writer struct {
	tw   *tar.Writer
	root string
	now  time.Time
	res  Result
	max  int64
	// dirs are the runtime's root and state dirs (their free space).
	dirs []string
}

// Write gathers the bundle and writes it to w as a tar.gz.
func Write(ctx context.Context, w io.Writer, o Options) (*Result, error) {
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	gz := gzip.NewWriter(w)
	b := &writer{tw: tar.NewWriter(gz), root: "podstep-bundle-" + now.UTC().Format("20060102-150405"), now: now, max: o.MaxFile}
	if b.max <= 0 {
		b.max = 4 << 20
	}
	if o.Recording != "" {
		b.file("recording"+recExt(o.Recording), o.Recording)
	}
	confDir := o.CNIConfDir
	if o.Runtime != nil {
		confDir = b.runtime(ctx, o.Runtime, confDir)
	}
	if confDir == "" {
		confDir = "/etc/cni/net.d"
	}
	b.cni(confDir)
	b.host()
	if o.API != nil && o.Pod != "" {
		b.cluster(ctx, o.API, o.Namespace, o.Pod)
	}
	if err := b.add("README.txt", []byte(b.readme(o, confDir))); err != nil {
		return nil, err
	}
	if err := b.tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return &b.res, nil
}

func recExt(path string) string {
	if strings.HasSuffix(path, ".gz") {
		return ".jsonl.gz"
	}
	return ".jsonl"
}

// add writes one file into the tar.
func (b *writer) add(name string, data []byte) error {
	h := &tar.Header{Name: b.root + "/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: b.now, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("bundle: %s: %w", name, err)
	}
	if _, err := b.tw.Write(data); err != nil {
		return fmt.Errorf("bundle: %s: %w", name, err)
	}
	b.res.Files = append(b.res.Files, name)
	return nil
}

func (b *writer) missing(format string, a ...any) {
	b.res.Missing = append(b.res.Missing, fmt.Sprintf(format, a...))
}

// json adds v as indented JSON, masked.
func (b *writer) json(name string, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		b.missing("%s: %v", name, err)
		return
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		b.missing("%s: %v", name, err)
		return
	}
	b.res.Masked += mask(tree)
	out, _ := json.MarshalIndent(tree, "", "  ")
	_ = b.add(name, append(out, '\n'))
}

// read reads a file from disk, at most b.max bytes; links are not followed.
func (b *writer) read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nofollow, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, b.max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > b.max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, b.max)
	}
	return data, nil
}

// maxRecording bounds the recording copied in (a 1,000-container pod's is
// about 56 MB).
const maxRecording = 1 << 30

// file adds a recording from disk as it is (already redacted), streamed:
// it may be far larger than the other files. Links are not followed.
func (b *writer) file(name, path string) {
	f, err := os.OpenFile(path, os.O_RDONLY|nofollow, 0)
	if err != nil {
		b.missing("%s: %v", name, err)
		return
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	switch {
	case err != nil:
		b.missing("%s: %v", name, err)
		return
	case !st.Mode().IsRegular():
		b.missing("%s: %s is not a regular file", name, path)
		return
	case st.Size() > maxRecording:
		b.missing("%s: %s is larger than %d bytes", name, path, maxRecording)
		return
	}
	h := &tar.Header{Name: b.root + "/" + name, Mode: 0o644, Size: st.Size(), ModTime: b.now, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(h); err != nil {
		b.missing("%s: %v", name, err)
		return
	}
	// A file that shrank meanwhile fails the tar (short write): the bundle
	// is then not written at all, which Write's caller reports.
	if _, err := io.CopyN(b.tw, f, st.Size()); err != nil {
		b.missing("%s: %v", name, err)
		return
	}
	b.res.Files = append(b.res.Files, name)
}

// runtime adds the runtime's version, verbose status (its info values are
// JSON: parsed, masked) and its pods and containers; it returns the CNI
// conf dir the runtime reports (or confDir when given).
func (b *writer) runtime(ctx context.Context, c *cri.Client, confDir string) string {
	if v, err := c.Version(ctx); err == nil {
		b.json("runtime/version.json", v)
	} else {
		b.missing("runtime/version.json: %v", err)
	}
	st, err := c.Status(ctx, true)
	if err != nil {
		b.missing("runtime/status.json: %v", err)
	} else {
		info := map[string]any{}
		keys := make([]string, 0, len(st.Info))
		for k := range st.Info {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var v any
			if json.Unmarshal([]byte(st.Info[k]), &v) != nil {
				v = st.Info[k]
			}
			info[k] = v
		}
		b.json("runtime/status.json", map[string]any{"status": st.Status, "info": info})
		if confDir == "" {
			confDir = reportedConfDir(info)
		}
		if cfg, ok := info["config"].(map[string]any); ok {
			for _, k := range []string{"containerdRootDir", "rootDir", "stateDir"} {
				if d, ok := cfg[k].(string); ok && d != "" {
					b.dirs = append(b.dirs, d)
				}
			}
		}
	}
	if l, err := c.ListPodSandbox(ctx, nil); err == nil {
		b.json("runtime/pods.json", l.Items)
	} else {
		b.missing("runtime/pods.json: %v", err)
	}
	if l, err := c.ListContainers(ctx, nil); err == nil {
		b.json("runtime/containers.json", l.Containers)
	} else {
		b.missing("runtime/containers.json: %v", err)
	}
	return confDir
}

// reportedConfDir is the CNI conf dir in a runtime's status info: containerd's
// config.cni.confDir, or its cniconfig.PluginConfDir.
func reportedConfDir(info map[string]any) string {
	if cfg, ok := info["config"].(map[string]any); ok {
		if cni, ok := cfg["cni"].(map[string]any); ok {
			if d, ok := cni["confDir"].(string); ok && d != "" {
				return d
			}
		}
	}
	if cni, ok := info["cniconfig"].(map[string]any); ok {
		if d, ok := cni["PluginConfDir"].(string); ok {
			return d
		}
	}
	return ""
}

// cni adds the CNI configs of dir (masked) and, for each host-local IPAM,
// the addresses it has handed out (one file per address, holding the
// container ID and interface).
func (b *writer) cni(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.missing("cni: %v", err)
		return
	}
	ipamDirs := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		cniConf := strings.HasSuffix(n, ".conf") || strings.HasSuffix(n, ".conflist") || strings.HasSuffix(n, ".json")
		if !e.Type().IsRegular() || !cniConf {
			continue
		}
		data, err := b.read(filepath.Join(dir, n))
		if err != nil {
			b.missing("cni/%s: %v", n, err)
			continue
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			b.missing("cni/%s: not JSON", n)
			continue
		}
		b.json("cni/"+n, v)
		for _, d := range hostLocalDirs(v) {
			ipamDirs[d] = true
		}
	}
	dirs := make([]string, 0, len(ipamDirs))
	for d := range ipamDirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		b.ipam(d)
	}
}

// hostLocalDirs are the data dirs of a CNI config's host-local IPAMs: its
// ipam.dataDir joined with the network's name (default
// /var/lib/cni/networks/NAME, as the plugin stores them).
func hostLocalDirs(v any) []string {
	conf, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	name, _ := conf["name"].(string)
	plugins := []any{conf}
	if p, ok := conf["plugins"].([]any); ok {
		plugins = p
	}
	var out []string
	for _, p := range plugins {
		pm, _ := p.(map[string]any)
		ipam, _ := pm["ipam"].(map[string]any)
		if ipam == nil || ipam["type"] != "host-local" || name == "" || strings.ContainsAny(name, "/\x00") {
			continue
		}
		base, _ := ipam["dataDir"].(string)
		if base == "" {
			base = "/var/lib/cni/networks"
		}
		out = append(out, filepath.Join(base, name))
	}
	return out
}

// ipam adds host-local's state of one network: each handed-out address and
// what holds it, and its last_reserved_ip.
func (b *writer) ipam(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.missing("cni/ipam %s: %v", dir, err)
		return
	}
	state := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "lock" {
			continue
		}
		data, err := b.read(filepath.Join(dir, e.Name()))
		if err != nil {
			state[e.Name()] = "(" + err.Error() + ")"
			continue
		}
		state[e.Name()] = strings.TrimSpace(string(data))
	}
	b.json("cni/ipam/"+filepath.Base(dir)+".json", map[string]any{"dir": dir, "addresses": state})
}

// host adds the kernel, the OS, the cgroup version and the free space.
func (b *writer) host() {
	var sb strings.Builder
	for _, f := range []string{"/proc/version", "/etc/os-release"} {
		if data, err := b.read(f); err == nil {
			fmt.Fprintf(&sb, "== %s\n%s\n", f, bytes.TrimSpace(data))
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		sb.WriteString("== cgroup\nv2 (unified)\n")
	} else {
		sb.WriteString("== cgroup\nv1\n")
	}
	if data, err := b.read("/proc/meminfo"); err == nil {
		sb.WriteString("== /proc/meminfo (first lines)\n")
		lines := strings.SplitN(string(data), "\n", 4)
		sb.WriteString(strings.Join(lines[:min(3, len(lines))], "\n") + "\n")
	}
	sb.WriteString(diskFree(b.dirs))
	_ = b.add("host.txt", []byte(sb.String()))
}

// cluster adds the pod, its events and its node's kubelet configz.
func (b *writer) cluster(ctx context.Context, api kube.API, ns, name string) {
	pod, err := kube.Get[corev1.Pod](ctx, api, kube.Pods, ns, name)
	if err != nil {
		b.missing("cluster/pod.yaml: %v", err)
		return
	}
	p := pod.DeepCopy()
	p.ManagedFields = nil
	if y, err := yaml.Marshal(p); err == nil {
		_ = b.add("cluster/pod.yaml", y)
	}
	var evs corev1.EventList
	sel := "involvedObject.uid=" + string(pod.UID)
	if err := api.List(ctx, kube.Events, ns, metav1.ListOptions{FieldSelector: sel}, &evs); err == nil {
		sort.SliceStable(evs.Items, func(i, j int) bool {
			return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp)
		})
		var sb strings.Builder
		for _, e := range evs.Items {
			fmt.Fprintf(&sb, "%s\t%s\t%s\tx%d\t%s\n", e.LastTimestamp.UTC().Format(time.RFC3339), e.Type, e.Reason, e.Count, e.Message)
		}
		_ = b.add("cluster/events.txt", []byte(sb.String()))
	} else {
		b.missing("cluster/events.txt: %v", err)
	}
	if pod.Spec.NodeName == "" {
		b.missing("cluster/configz.json: the pod is not scheduled")
		return
	}
	raw, err := api.Raw(ctx, "api", "v1", "nodes", pod.Spec.NodeName, "proxy", "configz")
	if err != nil {
		b.missing("cluster/configz.json: %v", err)
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		b.missing("cluster/configz.json: not JSON")
		return
	}
	b.json("cluster/configz.json", v)
}

func (b *writer) readme(o Options, confDir string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "podstep bundle, made %s by podstep %s\n\n", b.now.UTC().Format(time.RFC3339), o.Version)
	fmt.Fprintln(&sb, "What a runtime maintainer asks for about a pod that would not start.")
	if o.Endpoint != "" {
		fmt.Fprintf(&sb, "Runtime: %s\n", o.Endpoint)
	}
	if o.Pod != "" && o.API != nil {
		fmt.Fprintf(&sb, "Pod: %s/%s\n", o.Namespace, o.Pod)
	}
	fmt.Fprintf(&sb, "CNI conf dir: %s\n\n", confDir)
	about := map[string]string{
		"recording":               "the pod's CRI (and CSI) calls as podstep recorded them (run --record or proxy --record-dir); replay with `podstep replay FILE`, already redacted",
		"runtime/version.json":    "the CRI Version answer",
		"runtime/status.json":     "the CRI Status answer (verbose): conditions, and the runtime's info: its effective config, CNI state, handlers",
		"runtime/pods.json":       "ListPodSandbox: every pod sandbox of the runtime",
		"runtime/containers.json": "ListContainers: every container",
		"cni/":                    "the CNI configs of the conf dir",
		"cni/ipam/":               "host-local IPAM state: each address handed out and the container holding it (leaked addresses show here)",
		"host.txt":                "kernel, OS, cgroup version, memory, free space of the runtime's dirs",
		"cluster/pod.yaml":        "the pod from the API server (managedFields left out)",
		"cluster/events.txt":      "the pod's events",
		"cluster/configz.json":    "the kubelet's configuration (configz) of the pod's node",
	}
	fmt.Fprintln(&sb, "Inside:")
	for _, f := range b.res.Files {
		what := about[f]
		for k, v := range about {
			if what == "" && (strings.HasPrefix(f, k) && strings.HasSuffix(k, "/") || strings.HasPrefix(f, k+".")) {
				what = v
			}
		}
		fmt.Fprintf(&sb, "  %-28s %s\n", f, what)
	}
	fmt.Fprintf(&sb, "  %-28s %s\n\n", "README.txt", "this file")
	fmt.Fprintf(&sb, "Masked: %d values under keys naming a password, auth, token or secret (shown as %q).\n", b.res.Masked, maskText)
	if len(b.res.Missing) > 0 {
		fmt.Fprintln(&sb, "\nNot gathered:")
		for _, m := range b.res.Missing {
			fmt.Fprintf(&sb, "  %s\n", m)
		}
	}
	return sb.String()
}
