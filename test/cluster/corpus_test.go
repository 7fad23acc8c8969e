//go:build cluster

// Fidelity on real-world pods (issue 32, item 2): pods of the real-world
// corpus (../shared/realworld/pods, read-only; index.tsv lists each pod's
// features) are created through the API server on each node, the kubelet
// behind `podstep proxy --record-dir` as in TestFidelity, replayed with
// `podstep run --pod` on the replay runtime of the same version, and the two
// recordings compared with `podstep diff -o json` up to the first
// StartContainer: every image a pod names is the harness's busybox retagged,
// so its containers exit differently after that. docs/kubelet.md,
// "Real-world pods", says how each pod is adjusted and what is listed.
//
// In CI the pods of corpusCI run (they cover every feature of index.tsv; the
// test checks that); PODSTEP_FIDELITY_CORPUS=all runs all 118
// (hack/fidelity-corpus.sh). The corpus is $PODSTEP_CORPUS, else
// ../shared/realworld beside the repository or one of its parents; with
// CI=true a missing corpus fails the test.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// corpusCI are the corpus pods TestFidelityCorpus compares in CI (file name
// prefixes): together they have every feature index.tsv names (a greedy
// cover, then pods that exercise init containers, sidecars, several
// containers and the downward API more).
var corpusCI = []string{
	"005", // argo-cd repo-server: initContainers, probes, emptyDir, secret/configMap volumes, securityContext, affinity, nodeSelector, envFrom, serviceAccountName
	"011", // csi-driver-host-path inline app: csi, affinity
	"012", // csi-driver-host-path pod-raw: pvc, blockDevice (excluded: corpusExcluded)
	"016", // csi-nfs ephemeral: ephemeralVolume
	"024", // ingress-nginx controller: lifecycle, probes, capAdd, secretVolume, downwardAPI
	"034", // newrelic infra agent: hostPID/IPC, hostNetwork, privileged
	"038", // minio: hostPort, pvc, volumeClaimTemplates
	"042", // azure: inTreeVolume
	"055", // konnectivity agent: projected, tolerations, priorityClass
	"059", // myapp: sidecar
	"074", // image volume: imageVolume (containerd 2 only)
	"083", // private-reg: imagePullSecrets
	"088", // ml-worker: initContainers, sidecar
	"097", // mypod: topologySpread
	"113", // metallb speaker: initContainers, multiContainer, hostNetwork, secret/configMap volumes
}

// corpusRuntimes limits a corpus pod to some runtimes, and says why.
var corpusRuntimes = map[string]struct{ only, why string }{
	"074-k8s-website-pod-image-volume": {"2", "containerd 1.6 has no image volumes (the CRI's image mount)"},
}

// corpusExcluded are the corpus pods not compared at all, and why.
var corpusExcluded = map[string]string{
	"082-k8s-website-pod-with-node-affinity": "not a valid v1 Pod: its requiredDuringSchedulingIgnoredDuringExecution is a list of preferred terms (upstream's example as rendered), which neither the API server nor a decoder accepts",
	"012-csi-driver-host-path-pod-pod-raw":   "its claim is a raw block volume (volumeMode: Block): local-path provisions none, so the claim stays Pending and the pod is never scheduled",
}

// corpusUncovered are the features of index.tsv no compared pod shows, and
// why.
var corpusUncovered = map[string]string{
	"blockDevice": "its one pod (012) is excluded: local-path has no block volumes",
}

// corpusDir finds the corpus: $PODSTEP_CORPUS, else shared/realworld beside
// the repository root or one of its parents (a git worktree /work/wt/NAME
// finds /work/shared). It skips loudly, or fails under CI=true, when absent.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PODSTEP_CORPUS"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "pods")); err != nil {
			t.Fatalf("PODSTEP_CORPUS=%s: %v", d, err)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// The package is test/cluster: the repository root is two up.
	for d := filepath.Dir(filepath.Dir(wd)); filepath.Dir(d) != d; d = filepath.Dir(d) {
		c := filepath.Join(filepath.Dir(d), "shared", "realworld")
		if _, err := os.Stat(filepath.Join(c, "pods")); err == nil {
			return c
		}
	}
	notRun(t, "no real-world corpus (../shared/realworld beside the repository; or set PODSTEP_CORPUS)")
	return ""
}

// corpusFeatures reads index.tsv: each pod file's features.
func corpusFeatures(t *testing.T, dir string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 5 {
			continue
		}
		out[f[0]] = nil
		for _, x := range strings.Split(f[4], ",") {
			if x != "" {
				out[f[0]] = append(out[f[0]], x)
			}
		}
	}
	return out
}

// corpusEnv is what the corpus comparisons share besides fidelityEnv.
type corpusEnv struct {
	*fidelityEnv
	nodeLabels map[string]map[string]string // by node name
	nodeIPs    map[string]map[string]bool   // by node name: its InternalIP and ExternalIP addresses
	portMu     sync.Mutex
	hostPorts  map[string]*sync.Mutex // by node name and port ("NODE TCP/80"): one pod at a time
	tagMu      sync.Mutex
	tagged     map[string]bool // endpoint + " " + image
	pcMu       sync.Mutex
}

func TestFidelityCorpus(t *testing.T) {
	dir := corpusDir(t)
	features := corpusFeatures(t, dir)
	e := &corpusEnv{fidelityEnv: newFidelityEnv(t, 16), nodeLabels: map[string]map[string]string{}, nodeIPs: map[string]map[string]bool{},
		hostPorts: map[string]*sync.Mutex{}, tagged: map[string]bool{}}
	for _, n := range e.c.Nodes {
		node, err := e.c.Client.CoreV1().Nodes().Get(ctx(t), n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node %s: %v", n.Name, err)
		}
		e.nodeLabels[n.Name] = node.Labels
		e.nodeIPs[n.Name] = map[string]bool{}
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
				e.nodeIPs[n.Name][a.Address] = true
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "pods", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus pods in %s: %v", dir, err)
	}
	all := os.Getenv("PODSTEP_FIDELITY_CORPUS") == "all"
	var chosen []string
	covered := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		in := all
		for _, p := range corpusCI {
			in = in || strings.HasPrefix(base, p+"-")
		}
		if !in {
			continue
		}
		chosen = append(chosen, f)
		if corpusExcluded[strings.TrimSuffix(base, ".yaml")] != "" {
			continue
		}
		for _, x := range features[base] {
			covered[x] = true
		}
	}
	var missing []string
	for _, fs := range features {
		for _, x := range fs {
			if !covered[x] && corpusUncovered[x] == "" {
				missing = append(missing, x)
				covered[x] = true
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the compared pods leave features of index.tsv out: %s (add a pod that has them to corpusCI)", strings.Join(missing, ", "))
	}
	if len(chosen) != len(corpusCI) && !all {
		t.Errorf("corpusCI names %d pods, %d found in %s", len(corpusCI), len(chosen), dir)
	}
	t.Run("pods", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, f := range chosen {
			name := strings.TrimSuffix(filepath.Base(f), ".yaml")
			if why, ok := corpusExcluded[name]; ok {
				e.add(fidelityRow{scenario: name, runtime: "both", verdict: "excluded", notes: []string{why}})
				continue
			}
			for _, n := range e.c.Nodes {
				if o, ok := corpusRuntimes[name]; ok && o.only != n.Runtime {
					e.add(fidelityRow{scenario: name, runtime: n.Runtime, verdict: "excluded", notes: []string{o.why}})
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					e.slots <- struct{}{}
					defer func() { <-e.slots }()
					t.Run(name+"/containerd-"+n.Runtime, func(t *testing.T) { e.compareCorpus(t, f, name, n) })
				}()
			}
		}
		wg.Wait()
	})
	e.summary(t)
}

// corpusObjects is one corpus file: its Pod and the objects it brings.
type corpusObjects struct {
	pod        *corev1.Pod
	configMaps []corev1.ConfigMap
	secrets    []corev1.Secret
}

func readCorpusPod(t *testing.T, file string) corpusObjects {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var o corpusObjects
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.Kind == "" {
			continue
		}
		switch meta.Kind {
		case "Pod":
			o.pod = &corev1.Pod{}
			if err := yaml.Unmarshal([]byte(doc), o.pod); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			o.configMaps = append(o.configMaps, cm)
		case "Secret":
			var s corev1.Secret
			if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			o.secrets = append(o.secrets, s)
		default:
			t.Fatalf("%s: a %s: not expected in the corpus", file, meta.Kind)
		}
	}
	if o.pod == nil {
		t.Fatalf("%s: no Pod", file)
	}
	return o
}

// corpusRefs are the ConfigMaps and Secrets a pod names, each with the keys
// it names (a placeholder object gets those keys).
func corpusRefs(spec *corev1.PodSpec) (cms, secrets map[string]map[string]bool) {
	cms, secrets = map[string]map[string]bool{}, map[string]map[string]bool{}
	ref := func(m map[string]map[string]bool, name string, keys ...string) {
		if name == "" {
			return
		}
		if m[name] == nil {
			m[name] = map[string]bool{}
		}
		for _, k := range keys {
			m[name][k] = true
		}
	}
	items := func(its []corev1.KeyToPath) []string {
		var ks []string
		for _, i := range its {
			ks = append(ks, i.Key)
		}
		return ks
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			ref(cms, v.ConfigMap.Name, items(v.ConfigMap.Items)...)
		}
		if v.Secret != nil {
			ref(secrets, v.Secret.SecretName, items(v.Secret.Items)...)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					ref(cms, s.ConfigMap.Name, items(s.ConfigMap.Items)...)
				}
				if s.Secret != nil {
					ref(secrets, s.Secret.Name, items(s.Secret.Items)...)
				}
			}
		}
	}
	cs := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range cs {
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				ref(cms, ef.ConfigMapRef.Name)
			}
			if ef.SecretRef != nil {
				ref(secrets, ef.SecretRef.Name)
			}
		}
		for _, ev := range c.Env {
			if ev.ValueFrom == nil {
				continue
			}
			if r := ev.ValueFrom.ConfigMapKeyRef; r != nil {
				ref(cms, r.Name, r.Key)
			}
			if r := ev.ValueFrom.SecretKeyRef; r != nil {
				ref(secrets, r.Name, r.Key)
			}
		}
	}
	return cms, secrets
}

// corpusImages are the images a pod names: its containers' and its image
// volumes'.
func corpusImages(spec *corev1.PodSpec) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range spec.InitContainers {
		add(c.Image)
	}
	for _, c := range spec.Containers {
		add(c.Image)
	}
	for _, v := range spec.Volumes {
		if v.Image != nil {
			add(v.Image.Reference)
		}
	}
	return out
}

// imageRefRE is what the retag accepts: a docker reference (repository,
// optional :tag, optional @sha256:digest); others ("<your-private-image>")
// are left as they are, for both sides to refuse alike.
var imageRefRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$`)

// normalImage is the name containerd's CRI looks a reference up by
// (reference.ParseDockerRef): docker.io/library/ for official images,
// :latest when there is neither tag nor digest, and the tag dropped when
// there is a digest.
func normalImage(ref string) string {
	name, digest := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		name, digest = ref[:i], ref[i:]
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i:]
	}
	domain, rest := "docker.io", name
	if i := strings.Index(name, "/"); i >= 0 && (strings.ContainsAny(name[:i], ".:") || name[:i] == "localhost") {
		domain, rest = name[:i], name[i+1:]
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	switch {
	case digest != "":
		tag = ""
	case tag == "":
		tag = ":latest"
	}
	return domain + "/" + rest + tag + digest
}

// ctrFor is the ctr that talks to a runtime: containerd 2's own
// (hack/containerd-up.sh builds it into the cache) for runtime "2" when
// there, else Debian's.
func ctrFor(rt string) string {
	if rt == "2" {
		if c := os.Getenv("PODSTEP_CTR_2"); c != "" {
			return c
		}
		cache := os.Getenv("PODSTEP_CACHE_DIR")
		if home, _ := os.UserHomeDir(); cache == "" && home != "" {
			cache = filepath.Join(home, ".cache", "podstep")
		}
		if c := filepath.Join(cache, "containerd-v2.4.2", "bin", "ctr"); func() bool { _, err := os.Stat(c); return err == nil }() {
			return c
		}
	}
	return "ctr"
}

// retag makes image a name of the harness's busybox on the runtime at
// endpoint (once per endpoint and image).
func (e *corpusEnv) retag(t *testing.T, rt, endpoint, image string) {
	t.Helper()
	e.tagMu.Lock()
	defer e.tagMu.Unlock()
	key := endpoint + " " + image
	if e.tagged[key] {
		return
	}
	sock := strings.TrimPrefix(endpoint, "unix://")
	cmd := exec.Command(ctrFor(rt), "-a", sock, "-n", "k8s.io", "images", "tag", "--force", busybox, image)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ctr images tag %s %s on %s: %v\n%s", busybox, image, endpoint, err, out)
	}
	e.tagged[key] = true
}

// ensurePriorityClass makes the PriorityClass name when the cluster has
// none of that name (the API server's Priority admission refuses a pod
// naming an unknown one); it stays for the other pods.
func (e *corpusEnv) ensurePriorityClass(t *testing.T, name string) {
	t.Helper()
	e.pcMu.Lock()
	defer e.pcMu.Unlock()
	_, err := e.c.Client.SchedulingV1().PriorityClasses().Get(ctx(t), name, metav1.GetOptions{})
	if err == nil {
		return
	}
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get PriorityClass %s: %v", name, err)
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"podstep.dev/test": "corpus"}}, Value: 1000}
	if _, err := e.c.Client.SchedulingV1().PriorityClasses().Create(ctx(t), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create PriorityClass %s: %v", name, err)
	}
}

// hostPorts are the ports of the node the pod takes, sorted
// ("TCP/9000"): hostPort, or the container ports of a hostNetwork pod
// (which the API server defaults to host ports).
func hostPorts(spec *corev1.PodSpec) []string {
	seen := map[string]bool{}
	var out []string
	cs := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range cs {
		for _, p := range c.Ports {
			port := p.HostPort
			if spec.HostNetwork {
				port = p.ContainerPort
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if k := fmt.Sprintf("%s/%d", proto, port); port != 0 && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// lockHostPorts takes node n's host ports for one pod (in order: no two
// pods wait on each other) and returns their release.
func (e *corpusEnv) lockHostPorts(n Node, ports []string) func() {
	var held []*sync.Mutex
	for _, p := range ports {
		e.portMu.Lock()
		mu := e.hostPorts[n.Name+" "+p]
		if mu == nil {
			mu = &sync.Mutex{}
			e.hostPorts[n.Name+" "+p] = mu
		}
		e.portMu.Unlock()
		mu.Lock()
		held = append(held, mu)
	}
	return func() {
		for _, mu := range held {
			mu.Unlock()
		}
	}
}

// usesClaims: the pod has a PersistentVolumeClaim or generic ephemeral
// volume (bound by the scheduler: local-path is WaitForFirstConsumer).
func usesClaims(spec *corev1.PodSpec) bool {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// prepareCorpus makes the test's copy of a corpus pod for node n in ns and
// the objects it needs; adjusted lists every field changed and object made.
func (e *corpusEnv) prepareCorpus(t *testing.T, o corpusObjects, ns string, n Node) (pod *corev1.Pod, adjusted []string) {
	t.Helper()
	pod = o.pod.DeepCopy()
	spec := &pod.Spec
	pod.Namespace = ns
	pod.ResourceVersion, pod.UID = "", ""
	// Placement: bound to n, unless the scheduler must bind its claims.
	if usesClaims(spec) {
		spec.NodeSelector = map[string]string{runtimeLabel: n.Label}
		spec.NodeName = ""
		adjusted = append(adjusted, "nodeSelector="+runtimeLabel+":"+n.Label+" (claims: local-path binds on the scheduler's choice)")
	} else {
		spec.NodeName = n.Name
		adjusted = append(adjusted, "nodeName="+n.Name)
		// The kubelet's admission checks nodeSelector (PodMatchNodeSelector):
		// the entries this node lacks are dropped.
		var keys []string
		for k := range spec.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if e.nodeLabels[n.Name][k] != spec.NodeSelector[k] {
				adjusted = append(adjusted, "nodeSelector -"+k)
				delete(spec.NodeSelector, k)
			}
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		adjusted = append(adjusted, "affinity: required node affinity dropped")
	}
	if usesClaims(spec) && spec.Affinity != nil && (spec.Affinity.PodAntiAffinity != nil || spec.Affinity.PodAffinity != nil) {
		spec.Affinity.PodAffinity, spec.Affinity.PodAntiAffinity = nil, nil
		adjusted = append(adjusted, "affinity: pod (anti-)affinity dropped (scheduled)")
	}
	if usesClaims(spec) && len(spec.TopologySpreadConstraints) > 0 {
		spec.TopologySpreadConstraints = nil
		adjusted = append(adjusted, "topologySpreadConstraints dropped (scheduled)")
	}
	// Images: the retagged busybox, never pulled.
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if cs[i].ImagePullPolicy != corev1.PullIfNotPresent {
				cs[i].ImagePullPolicy = corev1.PullIfNotPresent
				adjusted = append(adjusted, "imagePullPolicy=IfNotPresent ("+cs[i].Name+")")
			}
		}
	}
	for i := range spec.Volumes {
		if v := spec.Volumes[i].Image; v != nil && v.PullPolicy != corev1.PullIfNotPresent {
			v.PullPolicy = corev1.PullIfNotPresent
			adjusted = append(adjusted, "image volume pullPolicy=IfNotPresent")
		}
	}
	for _, img := range corpusImages(spec) {
		if !imageRefRE.MatchString(img) {
			adjusted = append(adjusted, "image "+img+" not retagged (not a reference)")
			continue
		}
		e.retag(t, n.Runtime, n.Endpoint, normalImage(img))
		e.retag(t, n.Runtime, e.replay[n.Runtime], normalImage(img))
	}
	// A 2 s grace period (the kubelet's minimum): the teardown is not
	// compared, and the retagged containers ignore SIGTERM.
	two := int64(2)
	spec.TerminationGracePeriodSeconds = &two
	adjusted = append(adjusted, "terminationGracePeriodSeconds=2")
	if spec.ActiveDeadlineSeconds != nil {
		spec.ActiveDeadlineSeconds = nil
		adjusted = append(adjusted, "activeDeadlineSeconds dropped")
	}
	// Objects: the file's own, then placeholders for what no source defines.
	cl := e.c.Client.CoreV1()
	have := map[string]bool{}
	for _, cm := range o.configMaps {
		cm := cm.DeepCopy()
		cm.Namespace, cm.ResourceVersion = ns, ""
		if _, err := cl.ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ConfigMap %s: %v", cm.Name, err)
		}
		have["cm/"+cm.Name] = true
	}
	for _, s := range o.secrets {
		s := s.DeepCopy()
		s.Namespace, s.ResourceVersion = ns, ""
		if _, err := cl.Secrets(ns).Create(ctx(t), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Secret %s: %v", s.Name, err)
		}
		have["secret/"+s.Name] = true
	}
	cms, secrets := corpusRefs(spec)
	for _, name := range sortedKeys(cms) {
		if have["cm/"+name] || name == "kube-root-ca.crt" {
			continue
		}
		data := map[string]string{}
		for k := range cms[name] {
			data[k] = "placeholder"
		}
		if len(data) == 0 {
			data["placeholder"] = "placeholder"
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
		if _, err := cl.ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create placeholder ConfigMap %s: %v", name, err)
		}
		adjusted = append(adjusted, "placeholder ConfigMap "+name)
	}
	for _, name := range sortedKeys(secrets) {
		if have["secret/"+name] {
			continue
		}
		data := map[string][]byte{}
		for k := range secrets[name] {
			data[k] = []byte("placeholder")
		}
		if len(data) == 0 {
			data["placeholder"] = []byte("placeholder")
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
		if _, err := cl.Secrets(ns).Create(ctx(t), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create placeholder Secret %s: %v", name, err)
		}
		adjusted = append(adjusted, "placeholder Secret "+name)
	}
	for _, ps := range spec.ImagePullSecrets {
		if have["secret/"+ps.Name] || secrets[ps.Name] != nil {
			continue
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ps.Name, Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}
		if _, err := cl.Secrets(ns).Create(ctx(t), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create placeholder pull Secret %s: %v", ps.Name, err)
		}
		adjusted = append(adjusted, "placeholder pull Secret "+ps.Name)
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount // serviceAccount: the API server copies it into serviceAccountName
	}
	if sa != "" && sa != "default" {
		if _, err := cl.ServiceAccounts(ns).Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ServiceAccount %s: %v", sa, err)
		}
		adjusted = append(adjusted, "ServiceAccount "+sa)
	}
	if pc := spec.PriorityClassName; pc != "" && !strings.HasPrefix(pc, "system-") {
		e.ensurePriorityClass(t, pc)
		adjusted = append(adjusted, "PriorityClass "+pc)
	}
	// Claims: from the local-path StorageClass (the default), as the
	// StatefulSet controller would make them from volumeClaimTemplates.
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.PersistentVolumeClaim != nil {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: v.PersistentVolumeClaim.ClaimName, Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				}}
			for _, c := range spec.Containers {
				for _, d := range c.VolumeDevices {
					if d.Name == v.Name {
						block := corev1.PersistentVolumeBlock
						pvc.Spec.VolumeMode = &block
					}
				}
			}
			if _, err := cl.PersistentVolumeClaims(ns).Create(ctx(t), pvc, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create PersistentVolumeClaim %s: %v", pvc.Name, err)
			}
			adjusted = append(adjusted, "PersistentVolumeClaim "+pvc.Name+" (local-path)")
		}
		if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil && v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName != nil {
			v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName = nil
			adjusted = append(adjusted, "ephemeral volume "+v.Name+": storageClassName dropped (local-path)")
		}
	}
	return pod, adjusted
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// corpusStarted: the kubelet has gone as far as the comparison goes: a
// container (init or regular) was started or failed to start, waits on an
// error, or the pod ended (admission refused it, for one).
func corpusStarted(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range all {
		if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil || s.RestartCount > 0 {
			return true
		}
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return true
		}
	}
	return false
}

// compareCorpus runs one corpus pod on node n: the real pod, the replay,
// the diff up to the first StartContainer.
func (e *corpusEnv) compareCorpus(t *testing.T, file, name string, n Node) {
	row := fidelityRow{scenario: name, runtime: n.Runtime, verdict: "FAILED"}
	defer func() { e.add(row) }()
	o := readCorpusPod(t, file)
	// Two pods with the same host port on one node: the second is refused
	// at admission. They take turns.
	defer e.lockHostPorts(n, hostPorts(&o.pod.Spec))()
	ns := e.c.newNamespace(t, "corp")
	pod, adjusted := e.prepareCorpus(t, o, ns, n)
	t.Logf("adjusted: %s", strings.Join(adjusted, "; "))
	p, err := e.c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	var real *corev1.Pod
	if p.Spec.NodeName == "" {
		// Claims: the scheduler binds the pod once local-path has
		// provisioned its volumes (slow under load).
		if err := pollPod(e.c, ns, p.Name, 3*time.Minute, func(q *corev1.Pod) bool { return q.Spec.NodeName != "" }); err != nil {
			t.Fatalf("pod %s/%s not scheduled: %v", ns, p.Name, err)
		}
	}
	created := time.Now()
	mountWait := ""
	err = pollPod(e.c, ns, p.Name, 45*time.Second, func(q *corev1.Pod) bool {
		real = q
		if corpusStarted(q) {
			return true
		}
		// A volume that does not mount: the kubelet retries it for ever,
		// before any CRI call. The same failure 3 times in 30 s is that
		// (a first FailedMount may be a race the next retry passes).
		if time.Since(created) > 30*time.Second {
			mountWait = e.failedMount(ns, p.Name)
		}
		return mountWait != ""
	})
	if err != nil {
		if real == nil {
			t.Fatalf("pod %s/%s: %v", ns, p.Name, err)
		}
		// Not started in 45 s: a mount the kubelet waits on without
		// saying so yet (an in-tree volume with no plugin here), or a
		// slow start (then the kubelet starts it below).
		mountWait = "no sandbox after 45 s (no FailedMount event yet)"
	}
	if real.Spec.NodeName != n.Name {
		t.Fatalf("pod %s/%s on node %q, not %s: %s", ns, p.Name, real.Spec.NodeName, n.Name, describePod(real))
	}
	dir := t.TempDir()
	mine := filepath.Join(dir, "podstep.rec.gz")
	r := e.c.runPodstep(t, 3*time.Minute, "run", "--auto", "-o", "json", "--pod", ns+"/"+p.Name, "--kubeconfig", e.c.Kubeconfig,
		"-r", e.replay[n.Runtime], "--record", mine, "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"),
		"--max-restarts", "0", "--backoff-scale", "0.1", "--settle", "1s", "--init-timeout", "20s")
	pReason := podstepReason(r.stdout)
	if mountWait != "" && pReason != "FailedMount" {
		// podstep went on: the kubelet may have been slow only.
		if err := pollPod(e.c, ns, p.Name, 90*time.Second, func(q *corev1.Pod) bool { real = q; return corpusStarted(q) }); err != nil {
			t.Fatalf("pod %s/%s: the kubelet started no container (%s: %v); podstep: %s", ns, p.Name, mountWait, err, pReason)
		}
		mountWait = ""
	}
	kubeletIPs := e.podIPs(ns, p.Name) // before the pod is gone
	if err := e.c.Client.CoreV1().Pods(ns).Delete(ctx(t), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	// No CRI call on the kubelet's side, so no recording: admission
	// refused the pod, or a volume never mounts. podstep must stop at the
	// same place, for the same reason.
	kReason := ""
	switch {
	case mountWait != "":
		kReason = "FailedMount"
		row.verdict = "mount-wait"
		row.notes = append(row.notes, "kubelet waits on a volume: "+mountWait)
	case real.Status.Phase == corev1.PodFailed && len(real.Status.ContainerStatuses) == 0:
		kReason = real.Status.Reason
		row.verdict = "refused"
		row.notes = append(row.notes, "kubelet "+kReason+": "+real.Status.Message)
	}
	if kReason != "" {
		if pReason != kReason {
			row.verdict = "FAILED"
			t.Errorf("%s on containerd %s: the kubelet stopped before any CRI call (%s), podstep: %s (exit %d)\n%s", name, n.Runtime,
				kReason, pReason, r.exit, tail(r.stderr, 2000))
		}
		return
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("podstep run --pod made no recording (exit %d): %v\n%s", r.exit, err, tail(r.stderr, 2000))
	}
	theirs := filepath.Join(e.recDir[n.Runtime], fmt.Sprintf("%s_%s_%s.rec.gz", ns, p.Name, real.UID))
	// The kubelet's garbage collector (1-minute period) removes the
	// sandbox; under load, containerd 2's node took over 2 minutes.
	waitFor(t, 4*time.Minute, "the proxy's recording "+theirs, func(context.Context) (bool, error) {
		_, err := os.Stat(theirs)
		return err == nil, err
	})
	t.Cleanup(func() {
		if !t.Failed() {
			os.Remove(theirs)
			return
		}
		keep := filepath.Join(filepath.Dir(theirs), ns+"_"+p.Name+".podstep.rec.gz")
		if b, err := os.ReadFile(mine); err == nil && os.WriteFile(keep, b, 0o600) == nil {
			t.Logf("kept: podstep diff %s %s", theirs, keep)
		}
	})
	d := e.c.runPodstep(t, time.Minute, "diff", "-o", "json", "--different-pods", theirs, mine)
	if d.exit != 0 && d.exit != 1 {
		t.Fatalf("podstep diff: exit %d\n%s", d.exit, d.stderr)
	}
	var res fidelityDiff
	if err := json.Unmarshal([]byte(d.stdout), &res); err != nil {
		t.Fatalf("podstep diff -o json: %v\n%s", err, d.stdout)
	}
	started := untilFirstStart(&res)
	row.same, row.differ, row.onlyA, row.onlyB = res.Counts.Same, res.Counts.Differ, res.Counts.OnlyA, res.Counts.OnlyB
	podIP := dropIPEnv(&res, kubeletIPs, false)
	hostIP := dropIPEnv(&res, e.nodeIPs[n.Name], true)
	problems, notes := fidelityJudge(&res, false)
	if podIP {
		notes = append(notes, "pod-ip")
	}
	if hostIP {
		notes = append(notes, "host-ip")
	}
	problems, notes = corpusJudge(problems, notes, started)
	row.notes = append(row.notes, notes...)
	row.verdict = "FAILED"
	switch {
	case len(problems) > 0:
		t.Errorf("%s on containerd %s: differences up to the first start not listed in docs/kubelet.md:\n  %s", name, n.Runtime, strings.Join(problems, "\n  "))
	case len(notes) > 0:
		row.verdict = "listed"
	default:
		row.verdict = "equal"
	}
}

// failedMount is the message of a FailedMount event the kubelet repeated
// at least 3 times for pod ns/name, "" when there is none.
func (e *corpusEnv) failedMount(ns, name string) string {
	evs, err := e.c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	msg := ""
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == "FailedMount" && ev.Count >= 3 {
			msg = ev.Message
		}
	}
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return msg
}

// podIPs are the IPs the API server has for pod ns/name (the kubelet's
// status).
func (e *corpusEnv) podIPs(ns, name string) map[string]bool {
	ips := map[string]bool{}
	if p, err := e.c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		for _, ip := range p.Status.PodIPs {
			ips[ip.IP] = true
		}
		ips[p.Status.PodIP] = true
	}
	delete(ips, "")
	return ips
}

// dropIPEnv removes the CreateContainer env values that are one of
// kubeletIPs on the kubelet's side and an IP on podstep's (absent too, with
// absentOK), and reports whether it removed any. With the pod's IPs: the
// node's runtime and the replay runtime each give the sandbox an IP of
// their own CNI network. With the node's IPs: podstep takes this machine's
// address for status.hostIP (and a host-network pod's status.podIP), the
// kubelet its Node's InternalIP (docs/kubelet.md, host-ip).
func dropIPEnv(d *fidelityDiff, kubeletIPs map[string]bool, absentOK bool) bool {
	envValue := regexp.MustCompile(`^config\.envs\[".*"\]\.value$`)
	ip := func(v json.RawMessage) string {
		// podstep diff's value is the field's JSON, as a JSON string.
		var s string
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
		var inner string
		if json.Unmarshal([]byte(s), &inner) == nil {
			s = inner
		}
		if net.ParseIP(s) == nil {
			return ""
		}
		return s
	}
	dropped := false
	for i := range d.Calls {
		c := &d.Calls[i]
		kept := c.Fields[:0]
		for _, f := range c.Fields {
			absent := len(bytes.TrimSpace(f.B)) == 0 || string(f.B) == "null"
			if c.Method == "CreateContainer" && envValue.MatchString(f.Path) && kubeletIPs[ip(f.A)] && (ip(f.B) != "" || absentOK && absent) {
				dropped = true
				continue
			}
			kept = append(kept, f)
		}
		c.Fields = kept
	}
	return dropped
}

// untilFirstStart cuts a diff at its first StartContainer (on either side,
// included): what the comparison covers. Its counts are recounted. It
// reports whether a container started: there was one, and it did not fail
// on either side (a start that fails, RunContainerError, is retried by the
// kubelet with a new CreateContainer, as a create that fails is).
func untilFirstStart(d *fidelityDiff) bool {
	found := false
	failed := func(code string) bool { return code != "" && code != "OK" }
	for i, c := range d.Calls {
		if c.Method != "StartContainer" {
			continue
		}
		// One side's start aligned after the other's (the proxy records a
		// call when it is answered, and the kubelet's status polls may come
		// in between): the first start of the same container on the other
		// side, later in the list, with the same code, is its pair.
		if c.Op == "+" || c.Op == "-" {
			for j := i + 1; j < len(d.Calls); j++ {
				o := d.Calls[j]
				if o.Method == "StartContainer" && o.Container == c.Container && (o.Op == "+" || o.Op == "-") && o.Op != c.Op {
					if c.Op == "+" && o.CodeA == c.CodeB || c.Op == "-" && o.CodeB == c.CodeA {
						d.Calls[i].Op = "="
						d.Calls[i].CodeA, d.Calls[i].CodeB = c.CodeA+o.CodeA, c.CodeB+o.CodeB
						c = d.Calls[i]
					}
					break
				}
			}
		}
		d.Calls = d.Calls[:i+1]
		found = !failed(c.CodeA) && !failed(c.CodeB)
		break
	}
	d.Counts.Same, d.Counts.Differ, d.Counts.OnlyA, d.Counts.OnlyB = 0, 0, 0, 0
	for _, c := range d.Calls {
		switch c.Op {
		case "=":
			d.Counts.Same++
		case "~":
			d.Counts.Differ++
		case "-":
			d.Counts.OnlyA++
		case "+":
			d.Counts.OnlyB++
		}
	}
	return found
}

// corpusNormal are the differences of corpus pods that are listed (on top
// of fidelityNormal), each with its reason (docs/kubelet.md, "Real-world
// pods"): a problem matching one becomes its tag.
var corpusNormal = []struct {
	re       *regexp.Regexp
	tag, why string
	// unstarted: only when no container started (no StartContainer).
	unstarted bool
}{
	{regexp.MustCompile(`^(CreateContainer|StartContainer|PullImage|ImageStatus) \(.*\): \d+ kubelet only, 0 podstep only$`), "create-retries",
		"a container that never starts (CreateContainerError, or RunContainerError: a retagged image without the program): the kubelet tries to create and start it again on every sync after its back-off until the pod is deleted, podstep once (--max-restarts 0)", true},
}

func corpusJudge(problems, notes []string, started bool) (rest, tags []string) {
	tags = notes
next:
	for _, p := range problems {
		for _, nr := range corpusNormal {
			if nr.unstarted && started {
				continue
			}
			if nr.re.MatchString(p) {
				if !contains(tags, nr.tag) {
					tags = append(tags, nr.tag)
				}
				continue next
			}
		}
		rest = append(rest, p)
	}
	return rest, tags
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// podstepReason is the failure reason of a `run --auto -o json` summary
// ("" when it has none).
func podstepReason(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"type":"summary"`) {
			continue
		}
		var s struct {
			Display string `json:"display"`
			Failure *struct {
				Reason string `json:"reason"`
			} `json:"failure"`
		}
		if json.Unmarshal([]byte(line), &s) == nil {
			if s.Failure != nil {
				return s.Failure.Reason
			}
			return s.Display
		}
	}
	return "(no summary)"
}

// pollPod polls ns/name every 500 ms until cond holds (nil) or timeout.
func pollPod(c *Cluster, ns, name string, timeout time.Duration, cond func(*corev1.Pod) bool) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			if cond(p) {
				return nil
			}
			last = describePod(p)
		} else {
			last = err.Error()
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("not after %s: %s", timeout, last)
}

func tail(s string, n int) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
