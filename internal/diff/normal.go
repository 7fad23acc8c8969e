package diff

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Normalisation is one rule that makes two runs of the same pod compare
// equal: what differs between any two runs and says nothing of how the
// pod was created.
type Normalisation struct {
	// Placeholder is what replaces the value ("<pod-uid>"), or a word for a
	// rule that does not replace ("dropped", "folded").
	Placeholder string `json:"placeholder"`
	What        string `json:"what"`
}

// Normalisations lists the rules, in the order they apply; the README's
// "Comparing two runs" lists the same.
var Normalisations = []Normalisation{
	{"<sandbox>", "sandbox IDs: the pod_sandbox_id RunPodSandbox answered (<sandbox#2> for a second sandbox)"},
	{"<container:NAME/ATTEMPT>", "container IDs: the container_id CreateContainer answered, named by the request's metadata"},
	{"<root-dir>", "the kubelet root directory (--root-dir; /var/lib/kubelet), found before pods/<uid>/ in the mounts' host paths"},
	{"<log-dir>", "the pod log directory's parent (/var/log/pods), found before <ns>_<name>_<uid> in log_directory"},
	{"<pod-uid>", "the pod's UID (RunPodSandbox's config.metadata.uid), wherever it appears: labels, paths, filters"},
	{"<pod-name>", "the pod's name, only when one side's is the other's as a kubelet names a static pod, NAME-NODE (generatePodName)"},
	{"<hash>", "the kubernetes.io/config.hash annotation (the kubelet's hash of the pod, with its UID)"},
	{"<time>", "RFC 3339 timestamps in values (kubernetes.io/config.seen)"},
	{"<random>", "the termination-message file's random suffix (pods/<uid>/containers/<name>/<8 hex>)"},
	{"<id>", "any other 64-hex ID (<id#N> by first appearance)"},
	{"dropped", "podstep.dev/* labels and annotations: podstep's own bookkeeping, which a kubelet does not set"},
	{"folded", "consecutive identical calls (polling) are one entry with its count; counts are shown, not compared"},
}

// Subst is one value a recording had that a placeholder replaced.
type Subst struct {
	Placeholder string `json:"placeholder"`
	Value       string `json:"value"`
}

var (
	reTime = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	})
	reTermID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(/containers/[^/"]+/)[0-9a-f]{8}"$`) })
	reHexID  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[0-9a-f]{64}\b`) })
)

// normaliser replaces one recording's run-specific values.
type normaliser struct {
	substs []Subst // exact values, longest first
	ids    map[string]string
	nextID int
	// containerOf maps container IDs to names, for attribution.
	containerOf map[string]string
	// podName, when set, is replaced where a value is the name or a
	// log directory's <ns>_<name>_<uid> holds it (StaticPodName).
	podName string
}

// newNormaliser learns a recording's IDs, UID and directories from its
// calls.
func newNormaliser(calls []*Call) *normaliser {
	n := &normaliser{ids: map[string]string{}, containerOf: map[string]string{}}
	seen := map[string]bool{}
	add := func(ph, v string) {
		if v == "" || seen[v] {
			return
		}
		seen[v] = true
		n.substs = append(n.substs, Subst{Placeholder: ph, Value: v})
	}
	sandboxes := 0
	for _, c := range calls {
		switch c.Method {
		case "RunPodSandbox":
			var req struct {
				Config struct {
					Metadata struct {
						Name, Namespace, UID string
					}
					LogDirectory string `json:"log_directory"`
				}
			}
			var resp struct {
				ID string `json:"pod_sandbox_id"`
			}
			_ = json.Unmarshal(c.Request, &req)
			_ = json.Unmarshal(c.Response, &resp)
			if resp.ID != "" && !seen[resp.ID] {
				sandboxes++
				ph := "<sandbox>"
				if sandboxes > 1 {
					ph = "<sandbox#" + strconv.Itoa(sandboxes) + ">"
				}
				add(ph, resp.ID)
			}
			md := req.Config.Metadata
			if dir, ok := strings.CutSuffix(req.Config.LogDirectory, "/"+md.Namespace+"_"+md.Name+"_"+md.UID); ok && md.UID != "" {
				add("<log-dir>", dir)
			}
			add("<pod-uid>", md.UID)
		case "CreateContainer":
			var req struct {
				Config struct {
					Metadata struct {
						Name    string
						Attempt int
					}
					Mounts []struct {
						HostPath string `json:"host_path"`
					}
				}
				SandboxConfig struct {
					Metadata struct{ UID string }
				} `json:"sandbox_config"`
			}
			var resp struct {
				ID string `json:"container_id"`
			}
			_ = json.Unmarshal(c.Request, &req)
			_ = json.Unmarshal(c.Response, &resp)
			md := req.Config.Metadata
			if resp.ID != "" {
				add(fmt.Sprintf("<container:%s/%d>", md.Name, md.Attempt), resp.ID)
				n.containerOf[resp.ID] = md.Name
			}
			if uid := req.SandboxConfig.Metadata.UID; uid != "" {
				for _, m := range req.Config.Mounts {
					if root, _, ok := strings.Cut(m.HostPath, "/pods/"+uid+"/"); ok && root != "" {
						add("<root-dir>", root)
					}
				}
			}
		}
	}
	// Longest first, so that a directory is replaced before a UID inside
	// it, and an ID before anything it contains.
	sort.SliceStable(n.substs, func(i, j int) bool { return len(n.substs[i].Value) > len(n.substs[j].Value) })
	return n
}

// attribute gives calls without a container the one their request names
// (StopContainer in teardown, the relist's ContainerStatus).
func (n *normaliser) attribute(c *Call) {
	var req struct {
		ID string `json:"container_id"`
	}
	if json.Unmarshal(c.Request, &req) == nil && req.ID != "" {
		// The container the request names wins over its step's: a
		// teardown or relist step of one container holds calls for the
		// others too (a proxy's steps above all).
		if name := n.containerOf[req.ID]; name != "" {
			c.Container = name
		}
	}
}

// namesPod says whether the field at path of a method's request holds the
// pod's name: the sandbox config's metadata.name and hostname, and the
// io.kubernetes.pod.name label (not a container's name, nor another
// label that happens to be the same word).
func namesPod(method, path string) bool {
	switch {
	case strings.HasSuffix(path, `labels["io.kubernetes.pod.name"]`):
		return true
	case method == "RunPodSandbox":
		return path == "config.metadata.name" || path == "config.hostname"
	case method == "CreateContainer":
		return path == "sandbox_config.metadata.name" || path == "sandbox_config.hostname"
	}
	return false
}

// fields normalises a call's request fields.
func (n *normaliser) fields(method string, in []Field) []Field {
	out := make([]Field, 0, len(in))
	for _, f := range in {
		if strings.Contains(f.Path, `["podstep.dev/`) {
			continue
		}
		v := f.Value
		if strings.HasSuffix(f.Path, `["kubernetes.io/config.hash"]`) {
			v = `"<hash>"`
		}
		if n.podName != "" {
			if v == strconv.Quote(n.podName) && namesPod(method, f.Path) {
				v = `"<pod-name>"`
			}
			v = strings.ReplaceAll(v, "_"+n.podName+"_", "_<pod-name>_")
		}
		for _, s := range n.substs {
			if s.Placeholder != "<pod-name>" {
				v = strings.ReplaceAll(v, s.Value, s.Placeholder)
			}
		}
		v = reTime().ReplaceAllString(v, "<time>")
		v = reTermID().ReplaceAllString(v, `$1<random>"`)
		v = n.otherIDs(v)
		out = append(out, Field{Path: f.Path, Value: v})
	}
	return out
}

// otherIDs replaces the 64-hex IDs left, except image digests
// (sha256:<hex>, name@sha256:<hex>): the same image has the same digest in
// any run, and a different one is a difference.
func (n *normaliser) otherIDs(v string) string {
	locs := reHexID().FindAllStringIndex(v, -1)
	if locs == nil {
		return v
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] > 0 && v[l[0]-1] == ':' {
			continue
		}
		id := v[l[0]:l[1]]
		ph, ok := n.ids[id]
		if !ok {
			n.nextID++
			ph = "<id#" + strconv.Itoa(n.nextID) + ">"
			n.ids[id] = ph
		}
		b.WriteString(v[last:l[0]])
		b.WriteString(ph)
		last = l[1]
	}
	b.WriteString(v[last:])
	return b.String()
}
