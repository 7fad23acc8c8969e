//go:build cluster

package cluster

// The shadow runtime on the cluster (issue 37 items 2 and 4): with no replay
// harness named and no podstep.dev/replay-endpoint annotation, `podstep
// fleet` replays on a shadow each runner starts from its node's own
// containerd (in the host's mount namespace), and `podstep run --pod` on a
// node's own runtime replays on a shadow too; the kubelets' housekeeping
// (HandlePodCleanups, cleanupOrphanedPodCgroups) does not see them. After
// each, nothing of a shadow is left on the host (processes, mounts, links,
// iptables rules, dirs, pod cgroups) and a pod of the kubelet's that ran
// before is as it was (its sandboxes and containers, IP, restart counts).

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// kubeletPod is a pod the kubelet runs, made before a replay, and what
// must not change: its sandboxes and containers on the node's runtime
// (IDs, states), its IP and its containers' restart counts.
type kubeletPod struct {
	ns, name string
	node     Node
	before   string
}

// newKubeletPod makes a sleeper pod on n and waits until it runs.
func (c *Cluster) newKubeletPod(t *testing.T, ns string, n Node) *kubeletPod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bystander-" + strings.ReplaceAll(n.Runtime, ".", ""), Namespace: ns},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{sleeper("sleep", "")}, TerminationGracePeriodSeconds: ptrInt64(0)}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
	}
	c.waitForPodRunning(t, ns, p.Name)
	k := &kubeletPod{ns: ns, name: p.Name, node: n}
	k.before = c.podState(t, ns, p.Name, n)
	return k
}

// podState is what a replay must leave as it was of the kubelet's pod.
func (c *Cluster) podState(t *testing.T, ns, name string, n Node) string {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts := fleetCRIPods(t, n.Endpoint, string(p.UID))
	slices.Sort(parts)
	parts = append(parts, "ip "+p.Status.PodIP, "phase "+string(p.Status.Phase))
	for _, s := range p.Status.ContainerStatuses {
		parts = append(parts, "container "+s.Name+" restarts "+strings.Repeat("I", int(s.RestartCount))+" ready "+map[bool]string{true: "yes", false: "no"}[s.Ready])
	}
	return strings.Join(parts, "; ")
}

// untouched checks the kubelet's pod is as it was.
func (k *kubeletPod) untouched(t *testing.T, c *Cluster) {
	t.Helper()
	if now := c.podState(t, k.ns, k.name, k.node); now != k.before {
		t.Errorf("the kubelet's pod %s/%s on %s changed:\nbefore %s\nafter  %s", k.ns, k.name, k.node.Name, k.before, now)
	}
}

// shadowDirOf is a shadow's dir from its CRI endpoint
// (unix://BASE/ID/run/containerd.sock).
func shadowDirOf(t *testing.T, endpoint string) string {
	t.Helper()
	dir := filepath.Dir(filepath.Dir(strings.TrimPrefix(endpoint, "unix://")))
	if filepath.Base(filepath.Dir(dir)) != "shadows" {
		t.Fatalf("runtime endpoint %q is not a shadow's (BASE/shadows/ID/run/containerd.sock)", endpoint)
	}
	return dir
}

// shadowTraces is everything of the shadow in dir (and of the pod with
// uid, replayed on it) still on the host: a process naming its dir, a
// mount under it, its bridge pstepID, an iptables rule of its network
// podstep-shadow-ID, its dir, a cgroup of the pod (pod<UID>, under
// .../podstep/kubepods). Empty when all went.
func shadowTraces(t *testing.T, dir, uid string) []string {
	t.Helper()
	id := filepath.Base(dir)
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) {
			left = append(left, "process "+e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	// (its containerd's state dir, shadow.StateBase/ID, holds the pods'
	// rootfs, shm and network namespace mounts)
	state := "/run/podstep-shadows/" + id // shadow.StateBase/ID
	if _, err := os.Lstat(state); err == nil {
		left = append(left, "dir "+state)
	}
	for _, m := range append(testenv.MountsUnder(dir), testenv.MountsUnder(state)...) {
		left = append(left, "mount "+m)
	}
	if out, err := exec.Command("ip", "-o", "link").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "pstep"+id) {
				left = append(left, "link "+l)
			}
		}
	}
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			t.Fatalf("iptables-save -t %s: %v", table, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "podstep-shadow-"+id) {
				left = append(left, "iptables "+table+": "+l)
			}
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		left = append(left, "dir "+dir)
	}
	if uid != "" {
		// cgroupfs pod<UID>, systemd pod<UID with _>.slice
		names := []string{"pod" + uid, "kubepods-besteffort-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"}
		_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Count(p, "/") > 10 {
				return filepath.SkipDir
			}
			if slices.Contains(names, d.Name()) {
				left = append(left, "cgroup "+p)
				return filepath.SkipDir
			}
			return nil
		})
	}
	return left
}

// With no replay runtime anywhere (no annotation, no -r) the fleet's
// runners replay hello on shadows of their kubelets' runtimes and both
// survive --settle 5s (on the kubelets' runtimes themselves the kubelet
// stops 12 of 12: docs/fleet.md); nothing of the shadows is left and the
// kubelets' pods are as they were.
func TestFleetShadowZeroSetup(t *testing.T) {
	testenv.HostLock(t) // shadows: the integration suites' shadow tests check the host meanwhile
	e := newFleetEnv(t)
	e.removeReplayAnnotations(t)
	c := newCluster(t)
	ns := c.newNamespace(t, "shadow")
	var bystanders []*kubeletPod
	for _, n := range c.Nodes {
		bystanders = append(bystanders, c.newKubeletPod(t, ns, n))
	}
	start := time.Now()
	rep, stderr, code := e.run(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m",
		"--run-flag=--settle=5s")
	t.Logf("fleet on shadows: %s, exit %d", time.Since(start).Round(100*time.Millisecond), code)
	if code != 0 || len(rep.Nodes) != 2 {
		t.Fatalf("exit %d, %d nodes; stdout:\n%s\nstderr:\n%s", code, len(rep.Nodes), rep.raw, stderr)
	}
	var uids, dirs []string
	for _, n := range rep.Nodes {
		if n.Status != "ran" || n.Summary == nil || n.Summary.Outcome != "running" || n.StoppedFromOutside != "" {
			t.Errorf("node %s: %s %+v %s; stopped from outside: %q", n.Node, n.Status, n.Summary, n.Error, n.StoppedFromOutside)
		}
		if !n.Shadow || n.EndpointFrom != "configz" || n.Start == nil || !strings.Contains(n.Start.Why, "ran on a shadow of containerd") {
			t.Errorf("node %s: shadow %v, endpoint from %q, start %+v: want a shadow of the kubelet's runtime (configz)", n.Node, n.Shadow, n.EndpointFrom, n.Start)
			continue
		}
		t.Logf("node %s: %s", n.Node, n.Start.Why)
		if !strings.HasPrefix(n.Start.Endpoint, "unix://"+filepath.Join(e.hostDir, "shadows")+"/") {
			t.Errorf("node %s: shadow endpoint %s not under the host dir's shadows/", n.Node, n.Start.Endpoint)
		}
		dirs = append(dirs, shadowDirOf(t, n.Start.Endpoint))
		if n.Summary != nil {
			uids = append(uids, n.Summary.UID)
		}
	}
	if len(rep.Analysis.Groups) != 1 || len(rep.Analysis.Odd) != 0 {
		t.Errorf("groups %+v odd %+v: both nodes alike expected", rep.Analysis.Groups, rep.Analysis.Odd)
	}
	if strings.Contains(stderr, "HandlePodCleanups") {
		t.Errorf("the kubelet-runtime warning with both nodes on shadows:\n%s", stderr)
	}
	e.nothingLeft(t) // the host dir (and its shadows/) empty, no mount under it
	e.nothingOnRuntimes(t, uids)
	for i, d := range dirs {
		if left := shadowTraces(t, d, uids[i]); len(left) > 0 {
			t.Errorf("the shadow %s left:\n%s", d, strings.Join(left, "\n"))
		}
	}
	for _, b := range bystanders {
		b.untouched(t, c)
	}
}

// The odd node with no replay runtime anywhere: hostUsers: false on shadows
// of the kubelets' runtimes ends as on the runtimes themselves: containerd
// 1.6 reports no user-namespace support and the kubelet refuses the pod,
// named with its reason; containerd 2.x runs it (its rootfs under the
// shadow's state dir, which the pod's unprivileged root must reach).
func TestFleetShadowOddNodeUserNamespaces(t *testing.T) {
	testenv.HostLock(t) // shadows: the integration suites' shadow tests check the host meanwhile
	e := newFleetEnv(t)
	e.removeReplayAnnotations(t)
	rep, stderr, code := e.run(t, "-f", "testdata/pods/userns.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=0")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the pod failed on one node); stderr:\n%s", code, stderr)
	}
	for _, n := range rep.Nodes {
		if !n.Shadow || n.Start == nil || !strings.Contains(n.Start.Why, "ran on a shadow of containerd") {
			t.Errorf("node %s: shadow %v, start %+v: want a shadow of the kubelet's runtime", n.Node, n.Shadow, n.Start)
		}
	}
	if len(rep.Analysis.Odd) != 1 {
		t.Fatalf("odd groups %+v, want one; stdout:\n%s", rep.Analysis.Odd, rep.raw)
	}
	o := rep.Analysis.Odd[0]
	if !slices.Equal(o.Nodes, []string{e.nodes[0]}) || o.Step == nil || o.Step.Name != "run-sandbox" || o.Step.Reason != "CreatePodSandboxError" ||
		!strings.Contains(o.Step.Message, "user namespaces") {
		t.Errorf("odd %+v step %+v: want %s at run-sandbox, CreatePodSandboxError, user namespaces", o.Nodes, o.Step, e.nodes[0])
	}
	e.nothingLeft(t)
}

// shadowNormal are this test's normalisations of `podstep diff` between a
// replay on a replay harness (A) and one on a shadow of the kubelet's
// runtime (B), on top of diff's own (IDs, UIDs, dirs), each with its reason.
var shadowNormal = []struct {
	path *regexp.Regexp
	why  string
}{
	{regexp.MustCompile(`^(sandbox_config|config)\.linux\.cgroup_parent$`), "the shadow's pods go under a cgroup of podstep's own (CGROUP_ROOT/podstep/kubepods/...), out of the kubelet's sight: cleanupOrphanedPodCgroups kills processes in kubepods/pod<UID> cgroups of pods it does not know"},
	{regexp.MustCompile(`(^|\.)image\.image$`), "the image ID each runtime resolved the same name to: every harness builds its busybox image at start (hack/containerd-up.sh), the shadow has the node's (copied from it)"},
}

// `podstep run --pod` on node 1.6's own runtime (the one its kubelet
// watches) replays on a shadow (--shadow=auto: the kubelet's sandboxes are
// there), survives --settle 5s, and its calls equal those of the same
// replay on the replay harness (podstep diff, judged as TestFidelity does,
// with shadowNormal); nothing of the shadow is left and the kubelet's pod
// is as it was.
func TestRunPodShadowOnKubeletRuntime(t *testing.T) {
	testenv.HostLock(t) // shadows: the integration suites' shadow tests check the host meanwhile
	c := newCluster(t)
	v := testenv.Require(t, "SHADOW CLUSTER", "hack/test.sh's cluster phase sets them", "PODSTEP_BIN", "PODSTEP_REPLAY_ENDPOINT_16")
	n := c.Node("1.6")
	ns := c.newNamespace(t, "shadowpod")
	pod := c.newKubeletPod(t, ns, n)
	dir := t.TempDir()
	type runOut struct {
		rec, endpoint, why, outcome string
	}
	run := func(endpoint, name string, more ...string) runOut {
		rec := filepath.Join(dir, name+".rec.gz")
		start := time.Now()
		r := c.runPodstep(t, 3*time.Minute, append([]string{"run", "--auto", "-o", "json", "--pod", ns + "/" + pod.name, "--kubeconfig", c.Kubeconfig,
			"-r", endpoint, "--record", rec, "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"), "--settle", "5s"}, more...)...)
		t.Logf("run --pod on %s: exit %d in %s", name, r.exit, time.Since(start).Round(100*time.Millisecond))
		var o runOut
		o.rec = rec
		for _, l := range strings.Split(r.stdout, "\n") {
			var ev struct {
				Type    string `json:"type"`
				Runtime struct {
					Endpoint string `json:"endpoint"`
					Why      string `json:"why"`
				} `json:"runtime"`
				Outcome string `json:"outcome"`
			}
			if json.Unmarshal([]byte(l), &ev) != nil {
				continue
			}
			switch ev.Type {
			case "start":
				o.endpoint, o.why = ev.Runtime.Endpoint, ev.Runtime.Why
			case "summary":
				o.outcome = ev.Outcome
			}
		}
		if r.exit != 0 || o.outcome != "running" {
			t.Fatalf("run --pod on %s: exit %d, outcome %q\nstderr:\n%s", name, r.exit, o.outcome, r.stderr)
		}
		return o
	}
	sh := run(n.Endpoint, "shadow")
	if !strings.Contains(sh.why, "ran on a shadow of containerd") || !strings.Contains(sh.why, "a kubelet watches it") {
		t.Errorf("runtime.why %q: want a shadow, started because a kubelet watches the runtime", sh.why)
	}
	t.Logf("%s", sh.why)
	if left := shadowTraces(t, shadowDirOf(t, sh.endpoint), ""); len(left) > 0 {
		t.Errorf("the shadow left:\n%s", strings.Join(left, "\n"))
	}
	pod.untouched(t, c)

	harness := run(v[1], "harness")
	if strings.Contains(harness.why, "shadow") {
		t.Errorf("the replay harness (no kubelet's sandbox) was shadowed: %s", harness.why)
	}
	d := c.runPodstep(t, time.Minute, "diff", "-o", "json", harness.rec, sh.rec)
	if d.exit != 0 && d.exit != 1 {
		t.Fatalf("podstep diff: exit %d\n%s", d.exit, d.stderr)
	}
	var res fidelityDiff
	if err := json.Unmarshal([]byte(d.stdout), &res); err != nil {
		t.Fatalf("podstep diff -o json: %v\n%s", err, d.stdout)
	}
	var normalised []string
	for i := range res.Calls {
		fields := res.Calls[i].Fields[:0]
	field:
		for _, f := range res.Calls[i].Fields {
			for _, nr := range shadowNormal {
				if nr.path.MatchString(f.Path) {
					normalised = append(normalised, res.Calls[i].Method+" "+f.Path+": "+orAbsent(f.A)+" / "+orAbsent(f.B))
					continue field
				}
			}
			fields = append(fields, f)
		}
		res.Calls[i].Fields = fields
	}
	problems, notes := fidelityJudge(&res, false)
	t.Logf("diff harness/shadow: %d same, %d differ, %d harness only, %d shadow only; normalised: %q; notes: %q",
		res.Counts.Same, res.Counts.Differ, res.Counts.OnlyA, res.Counts.OnlyB, normalised, notes)
	if len(problems) > 0 {
		t.Errorf("the replay on the shadow differs from the one on the replay harness:\n  %s", strings.Join(problems, "\n  "))
	}
	pod.untouched(t, c)

	// The check can fail: a shadow kept with the pod (--keep) is seen, and
	// `podstep cleanup` (on the replay harness: the node's runtime is not
	// asked) removes it once its podstep has ended.
	kept := run(n.Endpoint, "kept", "--keep")
	kdir := shadowDirOf(t, kept.endpoint)
	left := shadowTraces(t, kdir, "")
	for _, want := range []string{"process ", "mount ", "link ", "dir "} {
		if !slices.ContainsFunc(left, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("kept shadow: no %q in what the check found: %q", want, left)
		}
	}
	cr := c.runPodstep(t, 2*time.Minute, "cleanup", "-r", v[1], "--grace-period", "0", "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"))
	if cr.exit != 0 || !strings.Contains(cr.stdout, "removed "+kdir) {
		t.Errorf("podstep cleanup: exit %d, want %s removed\n%s\n%s", cr.exit, kdir, cr.stdout, cr.stderr)
	}
	if left := shadowTraces(t, kdir, ""); len(left) > 0 {
		t.Errorf("after cleanup the kept shadow left:\n%s", strings.Join(left, "\n"))
	}
	pod.untouched(t, c)
}
