//go:build cluster

// Fidelity at scale (issue 21, item 5): every scenario of internal/scenario/data
// that a real kubelet can run here is created as a real pod through the API
// server on each node (containerd 1.6 and 2), its kubelet behind `podstep
// proxy --record-dir` (hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY), then
// replayed with `podstep run --pod NS/NAME --record` on the replay harness of
// the same runtime version, and the two recordings are compared with
// `podstep diff -o json`. Every difference must be one of podstep diff's own
// normalisations, one of fidelityNormal's (each with its reason), or a call
// sequence difference of a kind fidelityCallKinds lists; anything else fails
// the test. docs/kubelet.md, "Compared scenario by scenario", has the table.
//
// Environment (hack/test.sh's cluster phase): what helpers_test.go reads, and
// PODSTEP_RECORD_DIR_16/_2 (cluster-up.sh's RECORD_DIR_16/_2: each proxy's
// --record-dir), PODSTEP_REPLAY_ENDPOINT_16/_2 (runtimes no kubelet watches),
// PODSTEP_BIN. CI=true turns a missing one into a failure.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// fidelityExcluded are the scenarios a real kubelet cannot run here, and why.
var fidelityExcluded = map[string]string{
	"host-port-conflict":     "describes a Node of its own (another pod's host port, podstep.dev/existing-pods): the real node has none",
	"node-name-mismatch":     "describes a Node of its own; a pod bound to another node never reaches this node's kubelet",
	"node-selector-mismatch": "describes a Node of its own (no disktype label); the admission it tests happens before any CRI call",
	"out-of-cpu":             "describes a Node of its own (1 CPU); admission happens before any CRI call (TestPodAdmissionFromNode compares it with the real node)",
	"pod-level-out-of-cpu":   "describes a Node of its own (1 CPU); admission happens before any CRI call",
	"untolerated-taint":      "describes a Node of its own (a NoExecute taint); admission happens before any CRI call (TestPodAdmissionFromNode)",
	"sysctl-forbidden":       "the kubelet rejects it at admission (SysctlForbidden), before any CRI call: nothing for the proxy to record",
	"unknown-runtime-class":  "the API server refuses a pod whose RuntimeClass does not exist (RuntimeClass admission): no pod reaches a kubelet",
}

// fidelityRuntimes limits a scenario to some runtimes (default: both), and
// says why.
var fidelityRuntimes = map[string]struct {
	only, why string
}{
	"supplemental-groups-strict": {"2", "containerd 1.6 does not report supplementalGroupsPolicy: the kubelet rejects the pod at admission, before any CRI call"},
	"image-volume":               {"2", "containerd 1.6 has no image volumes (the CRI's image mount): the kubelet's CreateContainer fails before the comparison means anything"},
	"userns":                     {"2", "containerd 1.6 has no user namespaces for pods: the kubelet rejects hostUsers: false"},
	"procmount-unmasked":         {"2", "needs a user namespace (hostUsers: false), which containerd 1.6 has not"},
}

// fidelityRestarts are the scenarios whose containers restart: the
// kubelet's recording ends when the test deletes the pod, podstep's after
// --max-restarts, so their creation calls repeat a different number of times.
var fidelityRestarts = map[string]bool{
	"crashloop": true, "init-crashloop": true, "onfailure-retries": true, "poststart-fails": true,
	"restart-rule-exit-code": true, "restart-all-containers": true,
}

// fidelityNorm is one normalisation of the test's own, on top of podstep
// diff's: field paths (regexp) whose difference is explained.
type fidelityNorm struct {
	method string // "" any
	path   *regexp.Regexp
	// b: what podstep's side must be for the rule to apply ("" any value,
	// "absent" absent).
	b string
	// tag names the rule in the summary; why is its reason (docs/kubelet.md).
	tag, why string
	// restarts: the rule applies to the scenarios that restart only.
	restarts bool
}

var fidelityNormal = []fidelityNorm{
	{method: "", path: regexp.MustCompile(`^(config\.metadata\.attempt|config\.annotations\["io\.kubernetes\.container\.restartCount"\]|config\.log_path|container_id)$`),
		tag: "restarts", restarts: true, why: "the attempt a call is for: the kubelet had restarted the container more times by then (its back-off, until the pod is deleted) than podstep's --max-restarts 1"},
	{method: "", path: regexp.MustCompile(`(userns_options\.(uids|gids)|[ug]idMappings)\[\d+\]\.host_id$`), tag: "userns-range",
		why: "the user namespace's host range: the kubelet picks a random free one, podstep the first free one under its root dir (above)"},
	{"ContainerStatus", regexp.MustCompile(`^container_id$`), "", "polling", "the order a relist reads a restarted container's attempts in: the kubelet's PLEG walks them as the runtime lists them, podstep in the order it made them", false},
	{"RemoveContainer", regexp.MustCompile(`^container_id$`), "", "teardown", "which attempt of a restarted container is removed first: the kubelet's garbage collector removes the dead ones oldest last, podstep in the order it made them", false},
	{"ImageStatus", regexp.MustCompile(`^image\.annotations\[`), "", "image-checks", "which ImageStatus carries the pod's annotations: the kubelet's image manager checks with the pod's annotations in its ImageSpec (EnsureImageExists) and other checks without; an image check on one side only shifts which calls are paired", false},
	{"", regexp.MustCompile(`(^|\.)image\.image$`), "", "image-id", "the image ID each runtime resolved the same name to: every harness builds its busybox image at start (hack/containerd-up.sh, umoci: its config's created time differs), so the node's and the replay harness's IDs differ", false},
	{"", regexp.MustCompile(`^(sandbox_config|config)\.linux\.cgroup_parent$`), "absent", "cgroup-parent", "podstep runs without --cgroups-per-qos: the replay runtime is not under the node's kubelet's kubepods cgroups (and that kubelet removes pod cgroups it does not know)", false},
}

// fidelityCallKinds are the calls that may be on one side only, by
// method, and why (docs/kubelet.md).
var fidelityCallKinds = map[string]string{
	"Version": "periodic", "Status": "periodic", "RuntimeConfig": "periodic",
	"ListPodSandbox": "polling", "ListContainers": "polling", "PodSandboxStatus": "polling",
	"ContainerStatus": "polling", "ImageStatus": "image-checks", "ExecSync": "probes",
	"StopContainer": "teardown", "StopPodSandbox": "teardown", "RemoveContainer": "teardown",
	"RemovePodSandbox": "teardown",
}

// fidelityCreation are the calls that repeat with each restart.
var fidelityCreation = map[string]bool{"RunPodSandbox": true, "PullImage": true, "CreateContainer": true, "StartContainer": true}

// fidelityRow is one scenario on one node, for the summary table.
type fidelityRow struct {
	scenario, runtime, verdict string
	same, differ, onlyA, onlyB int
	notes                      []string
}

// fidelityEnv is what the test needs besides the cluster.
type fidelityEnv struct {
	c       *Cluster
	bin     string
	recDir  map[string]string // by runtime
	replay  map[string]string // by runtime
	mu      sync.Mutex
	rows    []fidelityRow
	slots   chan struct{}
	started time.Time
}

func TestFidelity(t *testing.T) {
	e := newFidelityEnv(t, 12)
	c := e.c
	files, err := filepath.Glob("../../internal/scenario/data/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	t.Run("scenarios", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".yaml")
			if why, ok := fidelityExcluded[name]; ok {
				e.add(fidelityRow{scenario: name, runtime: "both", verdict: "excluded", notes: []string{why}})
				continue
			}
			for _, n := range c.Nodes {
				if o, ok := fidelityRuntimes[name]; ok && o.only != n.Runtime {
					e.add(fidelityRow{scenario: name, runtime: n.Runtime, verdict: "excluded", notes: []string{o.why}})
					continue
				}
				wg.Add(1)
				go func() {
					// Not t.Parallel: go test runs -parallel (GOMAXPROCS, 2
					// here) of those at once, and a comparison is mostly
					// waiting; e.slots bounds them instead.
					defer wg.Done()
					e.slots <- struct{}{}
					defer func() { <-e.slots }()
					t.Run(name+"/containerd-"+n.Runtime, func(t *testing.T) { e.compare(t, f, name, n) })
				}()
			}
		}
		wg.Wait()
	})
	e.summary(t)
}

// newFidelityEnv connects to the cluster and reads what a comparison needs
// (each proxy's record dir, the replay runtimes, PODSTEP_BIN); slots bounds
// the comparisons at once. Shared with TestFidelityCorpus.
func newFidelityEnv(t *testing.T, slots int) *fidelityEnv {
	c := newCluster(t)
	e := &fidelityEnv{c: c, bin: os.Getenv("PODSTEP_BIN"), recDir: map[string]string{}, replay: map[string]string{},
		slots: make(chan struct{}, slots), started: time.Now()}
	var missing []string
	for _, rt := range []struct{ rt, s string }{{"1.6", "16"}, {"2", "2"}} {
		e.recDir[rt.rt] = os.Getenv("PODSTEP_RECORD_DIR_" + rt.s)
		e.replay[rt.rt] = os.Getenv("PODSTEP_REPLAY_ENDPOINT_" + rt.s)
		if e.recDir[rt.rt] == "" {
			missing = append(missing, "PODSTEP_RECORD_DIR_"+rt.s+" (cluster-up.sh with PODSTEP_CLUSTER_PROXY prints RECORD_DIR_"+rt.s+")")
		}
		if e.replay[rt.rt] == "" {
			missing = append(missing, "PODSTEP_REPLAY_ENDPOINT_"+rt.s)
		}
	}
	if e.bin == "" {
		missing = append(missing, "PODSTEP_BIN")
	}
	if len(missing) > 0 {
		notRun(t, strings.Join(missing, ", ")+" not set")
	}
	return e
}

func (e *fidelityEnv) add(r fidelityRow) {
	e.mu.Lock()
	e.rows = append(e.rows, r)
	e.mu.Unlock()
}

// summary logs the table (scenario, runtime, verdict, counts, notes) and
// the wall time.
func (e *fidelityEnv) summary(t *testing.T) {
	sort.Slice(e.rows, func(i, j int) bool {
		if e.rows[i].scenario != e.rows[j].scenario {
			return e.rows[i].scenario < e.rows[j].scenario
		}
		return e.rows[i].runtime < e.rows[j].runtime
	})
	var b strings.Builder
	counts := map[string]int{}
	for _, r := range e.rows {
		counts[r.verdict]++
		fmt.Fprintf(&b, "%-28s %-5s %-10s same %3d differ %2d onlyA %3d onlyB %3d  %s\n", r.scenario, r.runtime, r.verdict,
			r.same, r.differ, r.onlyA, r.onlyB, strings.Join(r.notes, ", "))
	}
	t.Logf("fidelity: %d compared (%d equal after normalisation, %d with listed differences, %d failed), %d excluded, in %s\n%s",
		counts["equal"]+counts["listed"]+counts["FAILED"], counts["equal"], counts["listed"], counts["FAILED"], counts["excluded"],
		time.Since(e.started).Round(time.Second), b.String())
}

// compare runs one scenario on node n: the real pod, the replay, the diff.
func (e *fidelityEnv) compare(t *testing.T, file, name string, n Node) {
	row := fidelityRow{scenario: name, runtime: n.Runtime, verdict: "FAILED"}
	defer func() { e.add(row) }()
	began := time.Now()
	phase := func(what string) { t.Logf("%s: %s", what, time.Since(began).Round(100*time.Millisecond)) }
	ns := e.c.newNamespace(t, "fid")
	pod := e.createObjects(t, file, ns, n)

	// The kubelet's run: until it has done what the scenario is about.
	var real *corev1.Pod
	waitFor(t, 90*time.Second, "pod "+ns+"/"+pod.Name+" settled on "+n.Name, func(ctx context.Context) (bool, error) {
		p, err := e.c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		real = p
		if fidelitySettled(p, fidelityRestarts[name]) {
			return true, nil
		}
		return false, fmt.Errorf("%s", describePod(p))
	})

	phase("the kubelet's pod settled")
	// podstep's replay of the cluster's pod, on the replay runtime of the same version.
	dir := t.TempDir()
	mine := filepath.Join(dir, "podstep.rec.gz")
	r := e.c.runPodstep(t, 3*time.Minute, "run", "--auto", "-o", "json", "--pod", ns+"/"+pod.Name, "--kubeconfig", e.c.Kubeconfig,
		"-r", e.replay[n.Runtime], "--record", mine, "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"),
		"--max-restarts", "1", "--backoff-scale", "0.1", "--settle", "2s")
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("podstep run --pod made no recording (exit %d): %v\n%s", r.exit, err, r.stderr)
	}

	phase("podstep run --pod done")
	// The kubelet's teardown, then its recording (written once it removed the sandbox).
	if err := e.c.Client.CoreV1().Pods(ns).Delete(ctx(t), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	theirs := filepath.Join(e.recDir[n.Runtime], fmt.Sprintf("%s_%s_%s.rec.gz", ns, pod.Name, real.UID))
	waitFor(t, 90*time.Second, "the proxy's recording "+theirs, func(context.Context) (bool, error) {
		_, err := os.Stat(theirs)
		return err == nil, err
	})
	t.Cleanup(func() {
		if !t.Failed() {
			os.Remove(theirs)
			return
		}
		// Both recordings kept for `podstep diff` by hand.
		keep := filepath.Join(filepath.Dir(theirs), ns+"_"+pod.Name+".podstep.rec.gz")
		if b, err := os.ReadFile(mine); err == nil && os.WriteFile(keep, b, 0o600) == nil {
			t.Logf("kept: podstep diff %s %s", theirs, keep)
		}
	})
	phase("the kubelet's recording written")

	d := e.c.runPodstep(t, time.Minute, "diff", "-o", "json", "--different-pods", theirs, mine)
	if d.exit != 0 && d.exit != 1 {
		t.Fatalf("podstep diff: exit %d\n%s", d.exit, d.stderr)
	}
	var res fidelityDiff
	if err := json.Unmarshal([]byte(d.stdout), &res); err != nil {
		t.Fatalf("podstep diff -o json: %v\n%s", err, d.stdout)
	}
	row.same, row.differ, row.onlyA, row.onlyB = res.Counts.Same, res.Counts.Differ, res.Counts.OnlyA, res.Counts.OnlyB
	problems, notes := fidelityJudge(&res, fidelityRestarts[name])
	row.notes = notes
	switch {
	case len(problems) > 0:
		t.Errorf("%s on containerd %s: differences not listed in docs/kubelet.md:\n  %s", name, n.Runtime, strings.Join(problems, "\n  "))
	case len(notes) > 0:
		row.verdict = "listed"
	default:
		row.verdict = "equal"
	}
}

// createObjects makes the scenario's ConfigMaps and Secrets in ns and its
// Pod, bound to n (spec.nodeName: the kubelet of n runs it as it is).
func (e *fidelityEnv) createObjects(t *testing.T, file, ns string, n Node) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.Kind == "" {
			continue
		}
		switch meta.Kind {
		case "Pod":
			pod = &corev1.Pod{}
			if err := yaml.UnmarshalStrict([]byte(doc), pod); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict([]byte(doc), &cm); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			cm.Namespace = ns
			if _, err := e.c.Client.CoreV1().ConfigMaps(ns).Create(ctx(t), &cm, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create ConfigMap %s: %v", cm.Name, err)
			}
		case "Secret":
			var s corev1.Secret
			if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			s.Namespace = ns
			if _, err := e.c.Client.CoreV1().Secrets(ns).Create(ctx(t), &s, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create Secret %s: %v", s.Name, err)
			}
		default:
			t.Fatalf("%s: a %s: the scenario should be in fidelityExcluded", file, meta.Kind)
		}
	}
	if pod == nil {
		t.Fatalf("%s: no Pod", file)
	}
	pod.Namespace = ns
	pod.Spec.NodeName = n.Name
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		// The kubelet's minimum: a container that ignores SIGTERM (sleep
		// as PID 1) stops in 2 s, not 30, on both sides (the kubelet's
		// teardown and its kill after a failed postStart hook use it, and
		// so does podstep's, read from the same pod).
		two := int64(2)
		pod.Spec.TerminationGracePeriodSeconds = &two
	}
	p, err := e.c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return p
}

// fidelitySettled: the kubelet has done what a scenario is about: the pod
// ended, runs ready, waits on an error, or (restarts) restarted once.
func fidelitySettled(p *corev1.Pod, restarts bool) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range all {
		if restarts {
			if s.RestartCount >= 1 {
				return true
			}
			continue
		}
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return true
		}
	}
	return !restarts && podRunning(p)
}

// fidelityDiff is the part of `podstep diff -o json` the test reads.
type fidelityDiff struct {
	Calls []struct {
		Op        string `json:"op"`
		Method    string `json:"method"`
		Container string `json:"container"`
		Fields    []struct {
			Path string          `json:"path"`
			A    json.RawMessage `json:"a"`
			B    json.RawMessage `json:"b"`
		} `json:"fields"`
		CodeA string `json:"code_a"`
		CodeB string `json:"code_b"`
	} `json:"calls"`
	Counts struct {
		Same   int `json:"same"`
		Differ int `json:"differ"`
		OnlyA  int `json:"only_a"`
		OnlyB  int `json:"only_b"`
	} `json:"counts"`
}

// fidelityJudge sorts a diff's differences: problems are not listed; notes
// name each listed kind once.
func fidelityJudge(d *fidelityDiff, restarts bool) (problems, notes []string) {
	seen := map[string]bool{}
	note := func(s string) {
		if !seen[s] {
			seen[s] = true
			notes = append(notes, s)
		}
	}
	// A creation call on one side only: the same call on the other side
	// only too (aligned elsewhere, around polling) is an order difference.
	only := map[string][2]int{}
	for _, c := range d.Calls {
		if (c.Op == "-" || c.Op == "+") && fidelityCallKinds[c.Method] == "" {
			k := c.Method + " (" + c.Container + ")"
			n := only[k]
			if c.Op == "-" {
				n[0]++
			} else {
				n[1]++
			}
			only[k] = n
		}
	}
	keys := make([]string, 0, len(only))
	for k := range only {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := only[k]
		if m := min(n[0], n[1]); m > 0 {
			note("order")
			n[0], n[1] = n[0]-m, n[1]-m
		}
		if n[0]+n[1] == 0 {
			continue
		}
		if fidelityCreation[strings.Fields(k)[0]] && restarts {
			note("restarts")
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: %d kubelet only, %d podstep only", k, n[0], n[1]))
	}
	for _, c := range d.Calls {
		switch c.Op {
		case "=":
		case "-", "+":
			if k := fidelityCallKinds[c.Method]; k != "" {
				note(k)
			}
		case "~":
			if c.CodeA != c.CodeB && c.CodeA != "" && c.CodeB != "" {
				if fidelityCallKinds[c.Method] != "" && (c.CodeA == "NotFound" || c.CodeB == "NotFound") {
					// A status read racing the removal of what it reads.
					note("polling")
					continue
				}
				problems = append(problems, fmt.Sprintf("%s: gRPC code %s (kubelet) / %s (podstep)", c.Method, c.CodeA, c.CodeB))
			}
		field:
			for _, f := range c.Fields {
				for _, nr := range fidelityNormal {
					if nr.method != "" && nr.method != c.Method || nr.restarts && !restarts || !nr.path.MatchString(f.Path) {
						continue
					}
					if nr.b == "absent" && len(f.B) != 0 && string(f.B) != "null" {
						continue
					}
					note(nr.tag)
					continue field
				}
				problems = append(problems, fmt.Sprintf("%s %s: kubelet %s, podstep %s", c.Method, f.Path, orAbsent(f.A), orAbsent(f.B)))
			}
		}
	}
	return problems, notes
}

func orAbsent(v json.RawMessage) string {
	if len(bytes.TrimSpace(v)) == 0 || string(v) == "null" {
		return "(absent)"
	}
	if len(v) > 200 {
		return string(v[:200]) + "…"
	}
	return string(v)
}
