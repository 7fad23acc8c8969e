package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestCopiedPodOffline: a pod as kubectl get pod -o yaml prints it (status,
// managedFields, ownerReferences, the nodeName of another node, the
// kube-api-access volume) runs offline on the simulator, exit 0: this
// machine plays its node, the token and kube-root-ca.crt are placeholders,
// each said once, in text and in JSON. (Before: admission refused it,
// NodeName, then the token failed the volume.)
func TestCopiedPodOffline(t *testing.T) {
	const f = "../../testdata/pods/copied-from-cluster.yaml"
	root, logs := dirs(t)
	code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "--settle", "0", "--grace-period", "0", "-f", f, "--root-dir", root, "--log-dir", logs)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"admitted on node worker-b7",
		"this machine plays node worker-b7",
		"--node FILE gives node worker-b7's own Node object",
		"the service-account token is a placeholder (not a valid JWT)",
		"ca.crt is a placeholder",
		"STATUS Running",
	} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q appears %d times, want once:\n%s", want, n, out)
		}
	}

	root, logs = dirs(t)
	code, out, errOut = run(t, "run", "--auto", "--sim", "-o", "json", "--settle", "0", "--grace-period", "0", "-f", f, "--root-dir", root, "--log-dir", logs)
	if code != ExitOK {
		t.Fatalf("json: exit %d\n%s%s", code, out, errOut)
	}
	warned := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Name     string   `json:"name"`
			Warnings []string `json:"warnings"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && len(line.Warnings) > 0 {
			warned[line.Name] = append(warned[line.Name], line.Warnings...)
		}
	}
	if w := strings.Join(warned["admit"], "\n"); !strings.Contains(w, "plays node worker-b7") {
		t.Errorf("admit's JSON warnings %q do not say this machine plays the node", w)
	}
	if w := warned["volumes"]; len(w) != 2 || !strings.Contains(w[0], "token is a placeholder") || !strings.Contains(w[1], "kube-root-ca.crt") {
		t.Errorf("volumes' JSON warnings %q, want the token's and kube-root-ca.crt's, once each", w)
	}
}

// TestCopiedPodOtherNode: --node naming another node than the pod's
// spec.nodeName is the kubelet's NodeName rejection, and both plan (before
// any runtime) and run say how to go on.
func TestCopiedPodOtherNode(t *testing.T) {
	const f = "../../testdata/pods/copied-from-cluster.yaml"
	nodeFile := writeTemp(t, "node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-a1\nstatus:\n  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n")
	code, out, errOut := run(t, "plan", "-f", f, "--node", nodeFile)
	out = unwrapPlan(out)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"the run will stop at step 1 (admit): NodeName: Predicate NodeName failed", "give --node the Node worker-b7"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	root, logs := dirs(t)
	code, out, errOut = run(t, "run", "--auto", "--sim", "--no-color", "--settle", "0", "-f", f, "--node", nodeFile, "--root-dir", root, "--log-dir", logs)
	if code == ExitOK || !strings.Contains(out, "give --node the Node worker-b7") {
		t.Errorf("run: exit %d, want a rejection naming --node:\n%s%s", code, out, errOut)
	}
}

// repoRoot is the nearest folder above the working directory whose go.mod
// declares this module (as test/internal/testenv's RepoRoot, which
// packages outside test/ cannot import).
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module github.com/podstep/podstep\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no repository root above the working directory")
		}
		dir = parent
	}
}

// corpusClaimPods lists the realworld corpus pods (../shared/realworld,
// read in place, never copied) whose features include pvc or
// volumeClaimTemplates, with the notes index.tsv gives them. Absent corpus:
// skipped, or a failure under CI=true.
func corpusClaimPods(t *testing.T) (dir string, pods [][2]string) {
	// ../shared beside the main checkout; a worktree under /work/wt/NAME
	// has it two levels up.
	root := repoRoot(t)
	dir = filepath.Join(root, "..", "shared", "realworld")
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join(root, "..", "..", "shared", "realworld")
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the realworld corpus is missing (%v) *** CI=true: this is a failure ***", err)
		}
		t.Skipf("the realworld corpus is not here: %v", err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(index)), "\n") {
		cols := strings.Split(line, "\t")
		if i == 0 || len(cols) < 5 {
			continue
		}
		feats := "," + cols[4] + ","
		if strings.Contains(feats, ",pvc,") || strings.Contains(feats, ",volumeClaimTemplates,") {
			notes := ""
			if len(cols) > 5 {
				notes = cols[5]
			}
			pods = append(pods, [2]string{cols[0], notes})
		}
	}
	if len(pods) == 0 {
		t.Fatal("no corpus pod with a claim")
	}
	return dir, pods
}

// claimObjects is a bound PersistentVolumeClaim and a hostPath
// PersistentVolume (DirectoryOrCreate under hostDir) for each claim the
// pod's volumes name, as YAML documents to append to the pod's file; the
// PV's volumeMode is Block for a claim a container uses as a device.
func claimObjects(t *testing.T, podYAML []byte, hostDir, phase string) string {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.Unmarshal(podYAML, &pod); err != nil {
		t.Fatal(err)
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	var sb strings.Builder
	for i, v := range pod.Spec.Volumes {
		claim := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = pod.Name + "-" + v.Name
		default:
			continue
		}
		pv := fmt.Sprintf("pv-%s-%d", pod.Name, i)
		uid := fmt.Sprintf("0000000%d-aaaa-4bbb-8ccc-dddddddddddd", i)
		fmt.Fprintf(&sb, `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: %s, uid: %s}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: %s
status: {phase: %s}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  accessModes: [ReadWriteOnce]
  capacity: {storage: 1Gi}
  hostPath: {path: %s, type: DirectoryOrCreate}
  claimRef: {namespace: %s, name: %s, uid: %s}
status: {phase: Bound}
`, claim, ns, uid, pv, phase, pv, filepath.Join(hostDir, pv), ns, claim, uid)
	}
	if sb.Len() == 0 {
		t.Fatalf("the pod names no claim")
	}
	return sb.String()
}

// TestCorpusClaimPods: every corpus pod with a claim runs on the simulator
// once the bundle carries a bound claim and a hostPath PersistentVolume
// for each (appended to the pod's file in a temp file, with stand-ins for
// the Secrets and ConfigMaps the corpus does not define), and
// the same pod with its claim Pending fails the volumes step with the
// kubelet's FailedMount message, the plan saying so first. A pod with a
// raw block device is left out, named in the log: podstep does not map
// block volumes yet.
func TestCorpusClaimPods(t *testing.T) {
	dir, pods := corpusClaimPods(t)
	ran := 0
	for _, p := range pods {
		name, notes := p[0], p[1]
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "pods", name))
			if err != nil {
				t.Fatal(err)
			}
			// Objects the corpus does not define (index.tsv notes):
			// stand-ins with the keys the pod names.
			data = append(data, []byte("\n"+standIns(t, data, notes))...)
			if strings.Contains(string(data), "volumeDevices:") {
				t.Skip("a raw block device (volumeDevices): podstep does not map block volumes yet")
			}
			hostDir := t.TempDir()
			bound := writeTemp(t, "bound.yaml", string(data)+"\n"+claimObjects(t, data, hostDir, "Bound"))
			root, logs := dirs(t)
			code, out, errOut := run(t, "run", "--auto", "--sim", "-o", "json", "--settle", "0", "--grace-period", "0", "-f", bound, "--root-dir", root, "--log-dir", logs)
			if code != ExitOK || !strings.Contains(out, "is Bound to PersistentVolume") || !strings.Contains(out, `"display":"Running"`) {
				t.Fatalf("bound: exit %d\n%s%s", code, out, errOut)
			}
			ran++

			pending := writeTemp(t, "pending.yaml", string(data)+"\n"+claimObjects(t, data, hostDir, "Pending"))
			code, out, _ = run(t, "plan", "-f", pending)
			out = unwrapPlan(out)
			if code != ExitOK || !strings.Contains(out, "the run will stop at step 3 (volumes): FailedMount: error processing PVC ") || !strings.Contains(out, "PVC is not bound") {
				t.Errorf("plan of a pending claim: exit %d, no stop:\n%s", code, out)
			}
			root, logs = dirs(t)
			code, out, _ = run(t, "run", "--auto", "--sim", "-o", "json", "--settle", "0", "--grace-period", "0", "-f", pending, "--root-dir", root, "--log-dir", logs)
			if code == ExitOK || !strings.Contains(out, `"reason":"FailedMount"`) || !strings.Contains(out, ": PVC is not bound") || !strings.Contains(out, `"key":"to go on"`) {
				t.Errorf("pending claim: exit %d, want FailedMount with the kubelet's message and a way on:\n%s", code, out)
			}
		})
	}
	t.Logf("%d of %d corpus pods with claims ran", ran, len(pods))
}

// unwrapPlan joins the plan's wrapped comment lines, so that a sentence
// can be searched whole.
func unwrapPlan(s string) string { return strings.ReplaceAll(s, "\n# ", " ") }

// standIns is a Secret or ConfigMap for each object index.tsv's notes name
// as missing ("missing:Secret/a+Secret/b"; an "otherFile:" object is in
// the pod's file already), with every key the pod's env and volumes name.
func standIns(t *testing.T, podYAML []byte, notes string) string {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.Unmarshal(podYAML, &pod); err != nil {
		t.Fatal(err)
	}
	keys := map[string]map[string]bool{} // "Kind/name" → keys
	add := func(kind, name, key string) {
		k := kind + "/" + name
		if keys[k] == nil {
			keys[k] = map[string]bool{}
		}
		if key != "" {
			keys[k][key] = true
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					add("Secret", e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				}
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key)
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			for _, it := range v.Secret.Items {
				add("Secret", v.Secret.SecretName, it.Key)
			}
		case v.ConfigMap != nil:
			for _, it := range v.ConfigMap.Items {
				add("ConfigMap", v.ConfigMap.Name, it.Key)
			}
		}
	}
	var sb strings.Builder
	made := map[string]bool{}
	for _, field := range strings.Split(notes, ",") {
		_, list, ok := strings.Cut(field, ":")
		if !ok || !strings.HasPrefix(field, "missing:") {
			continue
		}
		for _, obj := range strings.Split(list, "+") {
			kind, name, ok := strings.Cut(obj, "/")
			if !ok || (kind != "Secret" && kind != "ConfigMap") || made[obj] {
				continue
			}
			made[obj] = true
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\n", kind, name, pod.Namespace)
			ks := keys[kind+"/"+name]
			if len(ks) == 0 {
				continue
			}
			sb.WriteString("stringData:\n")
			if kind == "ConfigMap" {
				sb.WriteString("data:\n")
			}
			for k := range ks {
				fmt.Fprintf(&sb, "  %s: stand-in\n", k)
			}
		}
	}
	return strings.ReplaceAll(sb.String(), "stringData:\ndata:\n", "data:\n")
}
