//go:build cluster

// podstep run --pod on a real cluster (issue 21, items 1-3 and 6): the
// binary reads the pod and what the kubelet fetches for it from a real
// kube-apiserver, and replays it on each node's runtime.
//
// Environment: KUBECONFIG (an admin's), PODSTEP_BIN; for the tests that
// replay on a node, PODSTEP_NODE_16/_2 and PODSTEP_ENDPOINT_16/_2 (each
// node's CRI endpoint), and for the pull secret PODSTEP_REGISTRY_16/_2,
// PODSTEP_REGISTRY_IMAGE_16/_2, PODSTEP_REGISTRY_USER/_PASSWORD. The tests
// that need only the API server (RBAC, tokens, an unreachable server) run
// on any kube-apiserver (a throwaway one without nodes too: they use
// --sim and a Node object of their own). CI=true turns every missing
// variable into a failure.
//
// The helpers here are prefixed pc (this file's own); the package's shared
// ones are in helpers_test.go.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/test/internal/testenv"
)

// pcEnv is the cluster under test, as this file sees it.
type pcEnv struct {
	cs         kubernetes.Interface
	cfg        *rest.Config
	kubeconfig string
	bin        string
	nodes      []pcNode // the nodes with a runtime podstep can reach
}

type pcNode struct {
	name, endpoint, registry, image string
}

// pcNeed skips (or, with CI=true, fails) a test whose environment is missing.
func pcNeed(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("not run: %s", why)
	}
	t.Skipf("not run: %s", why)
}

func pcSetup(t *testing.T) *pcEnv {
	t.Helper()
	kc, bin := os.Getenv("KUBECONFIG"), os.Getenv("PODSTEP_BIN")
	if kc == "" || bin == "" {
		pcNeed(t, "KUBECONFIG and PODSTEP_BIN are needed (hack/cluster-up.sh prints KUBECONFIG)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("KUBECONFIG %s: %v", kc, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &pcEnv{cs: cs, cfg: cfg, kubeconfig: kc, bin: bin}
	for _, s := range []string{"16", "2"} {
		if n, ep := os.Getenv("PODSTEP_NODE_"+s), os.Getenv("PODSTEP_ENDPOINT_"+s); n != "" && ep != "" {
			e.nodes = append(e.nodes, pcNode{name: n, endpoint: ep, registry: os.Getenv("PODSTEP_REGISTRY_" + s), image: os.Getenv("PODSTEP_REGISTRY_IMAGE_" + s)})
		}
	}
	return e
}

func pcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pcNamespace makes a namespace of its own, with its default service
// account and kube-root-ca.crt (a throwaway API server has no
// controller-manager to make them), deleted at the end.
func (e *pcEnv) pcNamespace(t *testing.T) string {
	t.Helper()
	ctx := pcCtx(t)
	ns := fmt.Sprintf("podstep-cc-%06d", rand.IntN(1000000))
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pcLog(t, "delete namespace "+ns, e.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}))
	})
	// The controller-manager may have made them first.
	if _, err := e.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "test CA"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns
}

type pcResult struct {
	code           int
	stdout, stderr string
}

// pcRun runs the podstep binary.
func (e *pcEnv) pcRun(t *testing.T, args ...string) pcResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("podstep %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("podstep %s: exit %d\n%s%s", strings.Join(args, " "), code, errb.String(), out.String())
	return pcResult{code, out.String(), errb.String()}
}

// pcAssertNoSecrets fails when any output holds a secret or its base64.
func pcAssertNoSecrets(t *testing.T, outputs map[string]string, secrets ...string) {
	t.Helper()
	for name, out := range outputs {
		for _, s := range secrets {
			if s == "" {
				continue
			}
			for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(out, form) {
					t.Errorf("%s shows a secret value", name)
				}
			}
		}
	}
}

// pcUnmountUnder unmounts every mount below dir (deepest first).
func pcUnmountUnder(dir string) {
	for _, m := range testenv.MountsUnder(dir) {
		_ = syscall.Unmount(m, syscall.MNT_DETACH) // best effort: the test's temp dir goes next
	}
}

// pcLog logs a cleanup's error (a cleanup failing does not fail the test).
func pcLog(t testing.TB, what string, err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		t.Logf("cleanup: %s: %v", what, err)
	}
}

// pcWrite writes a test file.
func pcWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pcFakeNode makes a Node object without a kubelet (for the API-only tests).
func (e *pcEnv) pcFakeNode(t *testing.T, name string, cpu string, taints ...corev1.Taint) {
	t.Helper()
	ctx := pcCtx(t)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"podstep.dev/test": "clusterclient"}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
		}}
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pcLog(t, "delete node "+name, e.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
}

// pcKubeconfigFor writes a kubeconfig with a token of service account
// ns/sa (minted through the admin's TokenRequest) and the admin's server.
func (e *pcEnv) pcKubeconfigFor(t *testing.T, ns, sa string) string {
	t.Helper()
	ctx := pcCtx(t)
	tr, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	cl := raw.Clusters[cur.Cluster]
	var sb strings.Builder
	fmt.Fprintf(&sb, "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: %s\n", cl.Server)
	if len(cl.CertificateAuthorityData) > 0 {
		fmt.Fprintf(&sb, "    certificate-authority-data: %s\n", base64.StdEncoding.EncodeToString(cl.CertificateAuthorityData))
	} else if cl.CertificateAuthority != "" {
		fmt.Fprintf(&sb, "    certificate-authority: %s\n", cl.CertificateAuthority)
	} else {
		sb.WriteString("    insecure-skip-tls-verify: true\n")
	}
	fmt.Fprintf(&sb, "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: %s\nusers:\n- name: u\n  user:\n    token: %s\n", ns, tr.Status.Token)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pcClusterRole reads deploy/clusterrole.yaml's ClusterRole.
func pcClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../../deploy/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err == nil && cr.Kind == "ClusterRole" {
			return &cr
		}
	}
	t.Fatal("deploy/clusterrole.yaml has no ClusterRole")
	return nil
}

// pcBind makes a ClusterRole named after the namespace with rules and
// binds service account ns/sa to it.
func (e *pcEnv) pcBind(t *testing.T, ns, sa string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := pcCtx(t)
	name := ns + "-" + sa
	if _, err := e.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pcLog(t, "delete clusterrole "+name, e.cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
	if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pcLog(t, "delete clusterrolebinding "+name, e.cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
	// RBAC takes effect once the authorizer's cache has the binding.
	time.Sleep(time.Second)
}

// apiPod is a pod made directly in the API server, bound to nodeName,
// with the default kube-api-access volume, a ConfigMap volume, a Secret
// env and an envFrom.
func apiPod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: nodeName,
			Containers: []corev1.Container{{
				Name: "app", Image: "docker.io/library/busybox:1.35", Command: []string{"sleep", "3600"},
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/conf"}},
			}},
			Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}},
		},
	}
}

// pcObjects makes the ConfigMap and Secret of apiPod; it returns the
// Secret's value.
func (e *pcEnv) pcObjects(t *testing.T, ns string) string {
	t.Helper()
	ctx := pcCtx(t)
	password := fmt.Sprintf("pw-%016x", rand.Uint64())
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"MODE": "fast", "greeting": "hello from the cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Data: map[string][]byte{"password": []byte(password)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return password
}

// pcCreatePod creates pod in ns and returns it with its defaults and the
// kube-api-access volume the ServiceAccount admission added.
func (e *pcEnv) pcCreatePod(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := e.cs.CoreV1().Pods(ns).Create(pcCtx(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tokenReview asks the API server who token is.
func (e *pcEnv) tokenReview(t *testing.T, token string) authenticationv1.TokenReviewStatus {
	t.Helper()
	tr, err := e.cs.AuthenticationV1().TokenReviews().Create(pcCtx(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status
}

// TestPodTokenOnSim: run --pod on the simulated runtime (its volumes are
// written for real), kept: the projected token podstep minted through the
// TokenRequest API authenticates as system:serviceaccount:NS:default and is
// bound to the cluster's pod; the ConfigMap file holds the cluster's data;
// no token or Secret value shows in any output or the recording.
func TestPodTokenOnSim(t *testing.T) {
	e := pcSetup(t)
	ns := e.pcNamespace(t)
	password := e.pcObjects(t, ns)
	node := ns + "-node"
	e.pcFakeNode(t, node, "4")
	pod := e.pcCreatePod(t, ns, apiPod("web", node))
	root := t.TempDir()
	t.Cleanup(func() { pcUnmountUnder(root) }) // --keep left the volumes' tmpfs mounts
	logs := filepath.Join(root, "logs")
	rec := filepath.Join(root, "run.rec")
	r := e.pcRun(t, "run", "--auto", "--sim", "-o", "json", "--keep", "--settle", "0", "--kubeconfig", e.kubeconfig,
		"--pod", ns+"/web", "--root-dir", filepath.Join(root, "root"), "--log-dir", logs, "--record", rec)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	// One request per object (counted by podstep's transport): the pod, 2
	// ConfigMaps (settings, kube-root-ca.crt), 1 Secret, 1 TokenRequest,
	// the namespace's Services and default/kubernetes (the env vars the
	// kubelet adds), the Node and the node's pods; no configz (the Node is
	// the test's, not Ready).
	if !strings.Contains(r.stderr, "(9 requests)") {
		t.Errorf("stderr does not say 9 requests: %s", r.stderr)
	}
	var sum struct {
		UID     string `json:"uid"`
		Cluster struct {
			UID string `json:"uid"`
		} `json:"cluster"`
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Cluster.UID != string(pod.UID) || sum.UID == string(pod.UID) {
		t.Errorf("uids: podstep's %s, the cluster's %s (want %s, and podstep's own)", sum.UID, sum.Cluster.UID, pod.UID)
	}
	var vol string
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Fatal("the API server added no kube-api-access volume (ServiceAccount admission)")
	}
	podDir := filepath.Join(root, "root", "pods", sum.UID, "volumes")
	token, err := os.ReadFile(filepath.Join(podDir, "kubernetes.io~projected", vol, "token"))
	if err != nil {
		t.Fatal(err)
	}
	st := e.tokenReview(t, string(token))
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Errorf("TokenReview: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(pod.UID) {
		t.Errorf("token bound to pod uid %v, want %s", got, pod.UID)
	}
	greeting, err := os.ReadFile(filepath.Join(podDir, "kubernetes.io~configmap", "conf", "greeting"))
	if err != nil || string(greeting) != "hello from the cluster" {
		t.Errorf("ConfigMap file: %q, %v", greeting, err)
	}
	recording, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	pcAssertNoSecrets(t, map[string]string{"stdout": r.stdout, "stderr": r.stderr, "recording": string(recording)}, string(token), password)
}

// TestPodRBAC: a kubeconfig bound only to deploy/clusterrole.yaml's role
// runs the pod; one whose role lacks create serviceaccounts/token gets
// one line naming the verb and resource, exit 2, and nothing is made.
func TestPodRBAC(t *testing.T) {
	e := pcSetup(t)
	ns := e.pcNamespace(t)
	e.pcObjects(t, ns)
	node := ns + "-node"
	e.pcFakeNode(t, node, "4")
	e.pcCreatePod(t, ns, apiPod("web", node))
	role := pcClusterRole(t)

	e.pcBind(t, ns, "podstep", role.Rules)
	root := t.TempDir()
	r := e.pcRun(t, "run", "--auto", "--sim", "--settle", "0", "--kubeconfig", e.pcKubeconfigFor(t, ns, "podstep"),
		"--pod", ns+"/web", "--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 0 {
		t.Errorf("with deploy/clusterrole.yaml: exit %d", r.code)
	}

	var less []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		if len(rule.Resources) == 1 && rule.Resources[0] == "serviceaccounts/token" {
			continue
		}
		less = append(less, rule)
	}
	if len(less) != len(role.Rules)-1 {
		t.Fatalf("deploy/clusterrole.yaml has no rule for serviceaccounts/token alone")
	}
	e.pcBind(t, ns, "notoken", less)
	root2 := t.TempDir()
	r = e.pcRun(t, "run", "--auto", "-r", "unix:///nonexistent/podstep-cc.sock", "--kubeconfig", e.pcKubeconfigFor(t, ns, "notoken"),
		"--pod", ns+"/web", "--root-dir", filepath.Join(root2, "root"), "--log-dir", filepath.Join(root2, "logs"))
	want := `denied "create" on "serviceaccounts/token" (default) in namespace "` + ns + `": podstep needs create serviceaccounts/token`
	if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("without serviceaccounts/token: exit %d, stderr %q; want exit 2 and one line with %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(root2, "root")); !os.IsNotExist(err) {
		t.Errorf("something was made under %s", root2)
	}
}

// TestPodUnreachable: an API server that does not answer is exit 3,
// before the runtime is contacted.
func TestPodUnreachable(t *testing.T) {
	e := pcSetup(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	pcWrite(t, kc, "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: x\n")
	root := t.TempDir()
	r := e.pcRun(t, "run", "--auto", "-r", "unix:///nonexistent/podstep-cc.sock", "--kubeconfig", kc, "--pod", "default/web",
		"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 3 || !strings.Contains(r.stderr, "API server https://127.0.0.1:1 unreachable") {
		t.Errorf("exit %d, stderr %q; want exit 3, unreachable", r.code, r.stderr)
	}
}

// TestPodAdmissionFromNode: admission uses the API server's Node and the
// pods bound to it: a node whose allocatable cpu the pod exceeds gives
// OutOfcpu with the kubelet's message, a NoExecute taint the pod does not
// tolerate gives the kubelet's TaintToleration rejection, and a pod whose
// host port another pod on the node holds is refused.
func TestPodAdmissionFromNode(t *testing.T) {
	e := pcSetup(t)
	ns := e.pcNamespace(t)
	e.pcObjects(t, ns)
	small, tainted := ns+"-small", ns+"-tainted"
	e.pcFakeNode(t, small, "1")
	e.pcFakeNode(t, tainted, "4", corev1.Taint{Key: "podstep.dev/drain", Value: "yes", Effect: corev1.TaintEffectNoExecute})
	big := apiPod("big", small)
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}
	other := apiPod("other", small)
	other.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	e.pcCreatePod(t, ns, other)
	e.pcCreatePod(t, ns, big)
	e.pcCreatePod(t, ns, apiPod("untolerated", tainted))
	for _, tt := range []struct {
		pod, reason, message string
	}{
		{"big", "OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000"},
		{"untolerated", "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
	} {
		root := t.TempDir()
		r := e.pcRun(t, "run", "--auto", "--sim", "-o", "json", "--kubeconfig", e.kubeconfig, "--pod", ns+"/"+tt.pod,
			"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
		if r.code != 1 {
			t.Errorf("%s: exit %d, want 1 (rejected)", tt.pod, r.code)
		}
		if !strings.Contains(r.stdout, `"reason":"`+tt.reason+`"`) || !strings.Contains(r.stdout, tt.message) {
			t.Errorf("%s: want reason %s and message %q", tt.pod, tt.reason, tt.message)
		}
	}
}

// pcEvidencePod is apiPod whose container writes what it sees to a
// hostPath dir of its own ($TMPDIR/NS/$(POD_UID) through subPathExpr:
// podstep's pod has its own UID, so a kubelet's copy of the pod writes
// elsewhere): the token, the ConfigMap file, the Secret env, the envFrom
// value. With a registry, the image is the registry's private one, pulled
// with a pull secret regcred (made here).
func (e *pcEnv) pcEvidencePod(t *testing.T, ns, registry, image string) (*corev1.PodSpec, string) {
	t.Helper()
	out := filepath.Join(os.TempDir(), ns)
	t.Cleanup(func() { pcLog(t, "remove "+out, os.RemoveAll(out)) })
	pod := apiPod("web", "")
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `cat /var/run/secrets/kubernetes.io/serviceaccount/token > /out/token; cat /etc/conf/greeting > /out/greeting; printf %s "$PASSWORD" > /out/password; printf %s "$MODE" > /out/mode; exec sleep 3600`}
	c.Env = append(c.Env, corev1.EnvVar{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "out", MountPath: "/out", SubPathExpr: "$(POD_UID)"})
	// Ready once everything is written (podstep run --wait-ready waits for it).
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-s", "/out/mode"}}}, PeriodSeconds: 1}
	dirType := corev1.HostPathDirectoryOrCreate
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: out, Type: &dirType}}})
	if registry != "" && image != "" {
		cfg := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, os.Getenv("PODSTEP_REGISTRY_USER"), os.Getenv("PODSTEP_REGISTRY_PASSWORD"))
		if _, err := e.cs.CoreV1().Secrets(ns).Create(pcCtx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte(cfg)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		c.Image, c.ImagePullPolicy = image, corev1.PullAlways
	} else {
		t.Log("no PODSTEP_REGISTRY_*: no pull secret in the pod")
	}
	return &pod.Spec, out
}

// pcReplayAndCheck runs `podstep run --pod` of ns/name on endpoint and
// checks what the container wrote under out/<podstep's UID>: the token
// authenticates as the pod's service account (TokenReview) and is bound to
// the cluster's pod (podstep waits until the pod is Ready: the files are
// written), the ConfigMap file and env values are the cluster's,
// and no token, Secret value or registry password shows in the output.
func (e *pcEnv) pcReplayAndCheck(t *testing.T, ns, name, endpoint, out, password string) {
	t.Helper()
	p, err := e.cs.CoreV1().Pods(ns).Get(pcCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	r := e.pcRun(t, "run", "--auto", "-o", "json", "--settle", "0", "--grace-period", "0", "-r", endpoint, "--wait-ready", "--ready-timeout", "30s",
		"--kubeconfig", e.kubeconfig, "--pod", ns+"/"+name, "--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	e.pcCheckEvidence(t, ns, p, r, out, password)
}

// pcCheckEvidence checks what the container of a run wrote (pcEvidencePod).
func (e *pcEnv) pcCheckEvidence(t *testing.T, ns string, p *corev1.Pod, r pcResult, out, password string) {
	t.Helper()
	var sum struct {
		UID string `json:"uid"`
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the last line is not the summary: %v", err)
	}
	if sum.UID == "" || sum.UID == string(p.UID) {
		t.Fatalf("podstep's uid %q (the cluster's %s)", sum.UID, p.UID)
	}
	mine := filepath.Join(out, sum.UID)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(mine, name))
		if err != nil {
			t.Errorf("the container wrote no %s: %v", name, err)
		}
		return string(b)
	}
	token := read("token")
	st := e.tokenReview(t, token)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Errorf("TokenReview of the token inside the container: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(p.UID) {
		t.Errorf("the token is bound to pod uid %v, want the cluster's %s", got, p.UID)
	}
	if got := read("greeting"); got != "hello from the cluster" {
		t.Errorf("ConfigMap file in the container: %q", got)
	}
	if got := read("password"); got != password {
		t.Error("the Secret env in the container differs from the cluster's")
	}
	if got := read("mode"); got != "fast" {
		t.Errorf("envFrom in the container: MODE=%q", got)
	}
	if len(p.Spec.ImagePullSecrets) > 0 && !strings.Contains(r.stdout, `"secret regcred","value":"found (kubernetes.io/dockerconfigjson) in the API server`) {
		t.Error("the pull-secrets step does not say regcred came from the API server")
	}
	pcAssertNoSecrets(t, map[string]string{"stdout": r.stdout, "stderr": r.stderr}, token, password, os.Getenv("PODSTEP_REGISTRY_PASSWORD"))
}

// TestPodOnRuntime replays a pod of the cluster on a runtime no kubelet
// watches (PODSTEP_ENDPOINT, with PODSTEP_REGISTRY and
// PODSTEP_REGISTRY_IMAGE: hack/containerd-up.sh's), the pod bound to a Node
// object of the test's: what the container sees is the cluster's.
func TestPodOnRuntime(t *testing.T) {
	e := pcSetup(t)
	ep := os.Getenv("PODSTEP_ENDPOINT")
	if ep == "" {
		// Not a failure under CI=true: the cluster phase of hack/test.sh has
		// no runtime without a kubelet (TestPodOnNodes covers the nodes').
		t.Skip("not run: PODSTEP_ENDPOINT names no runtime without a kubelet (hack/containerd-up.sh's, with PODSTEP_REGISTRY and PODSTEP_REGISTRY_IMAGE)")
	}
	ns := e.pcNamespace(t)
	password := e.pcObjects(t, ns)
	node := ns + "-node"
	e.pcFakeNode(t, node, "4")
	spec, out := e.pcEvidencePod(t, ns, os.Getenv("PODSTEP_REGISTRY"), os.Getenv("PODSTEP_REGISTRY_IMAGE"))
	spec.NodeName = node
	e.pcCreatePod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: *spec})
	e.pcReplayAndCheck(t, ns, "web", ep, out, password)
}

// TestPodOnNodes replays a Deployment's pod (the default kube-api-access
// volume, a ConfigMap volume, a Secret env, an envFrom, a pull secret for
// the harness's private registry) on each node's runtime, the one its
// kubelet uses. podstep makes its own sandbox there (its UID, the replay
// label) and never touches the kubelet's pod: the kubelet's containers of
// the pod are the same, running, not restarted, after the run. The
// kubelet, though, stops a running sandbox it does not know within its
// housekeeping period (HandlePodCleanups: "Clean up containers for orphaned
// pod we had not seen before", kubelet_pods.go), so the replay either runs
// (and then what the container saw is checked as in TestPodOnRuntime) or is
// stopped by the kubelet, which the run reports as a runtime error of
// podstep's own sandbox.
func TestPodOnNodes(t *testing.T) {
	e := pcSetup(t)
	if len(e.nodes) == 0 {
		pcNeed(t, "PODSTEP_NODE_16/_2 and PODSTEP_ENDPOINT_16/_2 name no node (hack/cluster-up.sh)")
	}
	for _, n := range e.nodes {
		t.Run(n.name, func(t *testing.T) {
			ns := e.pcNamespace(t)
			password := e.pcObjects(t, ns)
			ctx := pcCtx(t)
			spec, out := e.pcEvidencePod(t, ns, n.registry, n.image)
			spec.NodeSelector = map[string]string{"kubernetes.io/hostname": n.name}
			spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			one := int32(1)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: *spec}}}
			if _, err := e.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var real *corev1.Pod
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				l, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
				if err != nil || len(l.Items) == 0 || !pcReady(&l.Items[0]) {
					return false, nil
				}
				real = &l.Items[0]
				return true, nil
			}); err != nil {
				t.Fatalf("the Deployment's pod is not Ready: %v", err)
			}
			root := t.TempDir()
			r := e.pcRun(t, "run", "--auto", "-o", "json", "--settle", "0", "--grace-period", "0", "-r", n.endpoint, "--wait-ready", "--ready-timeout", "30s",
				"--kubeconfig", e.kubeconfig, "--pod", ns+"/"+real.Name, "--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
			// podstep made its own sandbox on the node's runtime.
			if !strings.Contains(r.stdout, `"name":"run-sandbox"`) || !strings.Contains(r.stdout, `"podstep.dev/replay-of":"`+string(real.UID)+`"`) {
				t.Errorf("no RunPodSandbox labelled podstep.dev/replay-of=%s on %s", real.UID, n.endpoint)
			}
			// The kubelet's pod is untouched.
			after, err := e.cs.CoreV1().Pods(ns).Get(ctx, real.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !pcReady(after) || after.Status.ContainerStatuses[0].ContainerID != real.Status.ContainerStatuses[0].ContainerID || after.Status.ContainerStatuses[0].RestartCount != 0 {
				t.Errorf("the kubelet's pod changed: %+v", after.Status.ContainerStatuses)
			}
			pcAssertNoSecrets(t, map[string]string{"stdout": r.stdout, "stderr": r.stderr}, password, os.Getenv("PODSTEP_REGISTRY_PASSWORD"))
			if r.code != 0 {
				t.Logf("exit %d: the node's kubelet stopped podstep's sandbox before the pod was Ready (its housekeeping)", r.code)
				if r.code != 1 {
					t.Errorf("exit %d, want 0 or 1", r.code)
				}
				return
			}
			e.pcCheckEvidence(t, ns, real, r, out, password)
		})
	}
}

// pcReady says whether the pod is Ready.
func pcReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && len(p.Status.ContainerStatuses) > 0
		}
	}
	return false
}

// TestPodMissingSecret: a Deployment's pod whose Secret volume names a
// Secret that is not there: podstep's FailedMount reason and message are
// the real kubelet's event for that pod on that node.
func TestPodMissingSecret(t *testing.T) {
	e := pcSetup(t)
	if len(e.nodes) == 0 {
		pcNeed(t, "PODSTEP_NODE_16/_2 and PODSTEP_ENDPOINT_16/_2 name no node (hack/cluster-up.sh)")
	}
	n := e.nodes[0]
	ns := e.pcNamespace(t)
	ctx := pcCtx(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nosecret"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"kubernetes.io/hostname": n.name},
		Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		// Mounted: the kubelet skips a volume no container uses
		// (desired_state_of_world_populator.go, "Skipping unused volume").
		Containers: []corev1.Container{{Name: "app", Image: "docker.io/library/busybox:1.35", Command: []string{"sleep", "3600"},
			VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/creds"}}}},
		Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}}}},
	}}
	p := e.pcCreatePod(t, ns, pod)
	var kubelet *corev1.Event
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(p.UID)).String()
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, nil
		}
		for i := range l.Items {
			if ev := &l.Items[i]; ev.Reason == "FailedMount" && (ev.Source.Component == "kubelet" || ev.ReportingController == "kubelet") {
				kubelet = &l.Items[i]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the kubelet posted no FailedMount: %v", err)
	}
	root := t.TempDir()
	r := e.pcRun(t, "run", "--auto", "-o", "json", "-r", n.endpoint, "--kubeconfig", e.kubeconfig, "--pod", ns+"/nosecret",
		"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	if !strings.Contains(r.stdout, `"reason":"FailedMount"`) || !strings.Contains(r.stdout, jsonString(kubelet.Message)) {
		t.Errorf("podstep's failure is not the kubelet's FailedMount %q", kubelet.Message)
	}
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// pcProxy forwards TCP connections to target until stop, which closes the
// listener and every connection: the API server as podstep sees it stops.
func pcProxy(t *testing.T, target string) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go func() { _, _ = io.Copy(u, c) }()
			go func() { _, _ = io.Copy(c, u) }()
		}
	}()
	stop = func() {
		_ = ln.Close() // closed once already on a second stop
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// TestPodAPIServerStopped: the API server stops answering after the pod was
// read (a proxy in front of it is closed while the pod runs): the run goes
// on without it (everything was read first), tears the pod down, and exits
// 3 saying the API server is unreachable; nothing is left in the root dir.
func TestPodAPIServerStopped(t *testing.T) {
	e := pcSetup(t)
	ns := e.pcNamespace(t)
	e.pcObjects(t, ns)
	node := ns + "-node"
	e.pcFakeNode(t, node, "4")
	e.pcCreatePod(t, ns, apiPod("web", node))
	u, err := url.Parse(e.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := pcProxy(t, u.Host)
	raw, err := os.ReadFile(e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	// The proxy listens on 127.0.0.1 too: the serving certificate still matches.
	pcWrite(t, kc, strings.ReplaceAll(string(raw), u.Host, addr))
	if !strings.Contains(string(raw), u.Host) {
		t.Fatalf("the kubeconfig does not name %s", u.Host)
	}
	root := t.TempDir()
	cmd := exec.Command(e.bin, "run", "--auto", "--sim", "--settle", "3s", "--kubeconfig", kc, "--pod", ns+"/web",
		"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	stderr, _ := cmd.StderrPipe()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	sc := bufio.NewScanner(stderr)
	stopped := false
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
		if !stopped && strings.Contains(sc.Text(), "fetched from API server") {
			stop() // the pod and its objects were read: the API server goes away
			stopped = true
		}
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	t.Logf("exit %d\n%s%s", code, errText.String(), out.String())
	if !stopped || code != 3 || !strings.Contains(errText.String(), "unreachable") {
		t.Errorf("exit %d (stopped %v); want 3 and the API server unreachable", code, stopped)
	}
	if !strings.Contains(out.String(), "torn down") {
		t.Error("the pod was not torn down")
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "root", "pods")); len(ents) != 0 {
		t.Errorf("left in the root dir: %v", ents)
	}
}

// BenchmarkRunPod: the wall time of `podstep run --auto --sim` of one pod
// from a manifest (-f: the pod, its ConfigMap and Secret) and of the same
// pod read from the API server (--pod: the reads, and with the
// kube-api-access volume a TokenRequest). Each sub-benchmark reports the
// median of its iterations (run with -benchtime 10x; hack/bench-cluster.sh).
func BenchmarkRunPod(b *testing.B) {
	kc, bin := os.Getenv("KUBECONFIG"), os.Getenv("PODSTEP_BIN")
	if kc == "" || bin == "" {
		b.Skip("KUBECONFIG and PODSTEP_BIN are needed")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		b.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := fmt.Sprintf("podstep-bench-%06d", rand.IntN(1000000))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { pcLog(b, "delete namespace", cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})) }()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"MODE": "fast", "greeting": "hello"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Data: map[string][]byte{"password": []byte("bench-password-1")}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	node := ns + "-node"
	_, err = cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { pcLog(b, "delete node", cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})) }()
	noToken := apiPod("notoken", node)
	f := false
	noToken.Spec.AutomountServiceAccountToken = &f
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, noToken, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, apiPod("withtoken", node), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The manifest of the same pod: kubectl get -o yaml, and its objects.
	got, err := cs.CoreV1().Pods(ns).Get(ctx, "notoken", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	got.APIVersion, got.Kind = "v1", "Pod"
	cm.APIVersion, cm.Kind, sec.APIVersion, sec.Kind = "v1", "ConfigMap", "v1", "Secret"
	nodeObj, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	nodeObj.APIVersion, nodeObj.Kind = "v1", "Node"
	var docs []string
	for _, o := range []any{got, cm, sec, nodeObj} {
		y, err := yaml.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, string(y))
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	common := []string{"run", "--auto", "--sim", "-q", "--settle", "0", "--grace-period", "0", "--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs")}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"file", []string{"-f", file}},
		{"pod", []string{"--kubeconfig", kc, "--pod", ns + "/notoken"}},
		{"pod-token", []string{"--kubeconfig", kc, "--pod", ns + "/withtoken"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ds []float64
			for i := 0; i < b.N; i++ {
				start := time.Now()
				out, err := exec.Command(bin, append(append([]string{}, common...), c.args...)...).CombinedOutput()
				ds = append(ds, float64(time.Since(start).Microseconds())/1000)
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
			sort.Float64s(ds)
			b.ReportMetric(ds[len(ds)/2], "median-ms")
		})
	}
}

// TestPodTooBigAsKubelet: a pod bound straight to a real node (no
// scheduler) that asks for more cpu than the node has: the real kubelet
// rejects it (pod Failed, OutOfcpu), and podstep run --pod, admitting it to
// the API server's Node and the pods bound to it, rejects it with the same
// reason and message.
func TestPodTooBigAsKubelet(t *testing.T) {
	e := pcSetup(t)
	if len(e.nodes) == 0 {
		pcNeed(t, "PODSTEP_NODE_16/_2 and PODSTEP_ENDPOINT_16/_2 name no node (hack/cluster-up.sh)")
	}
	n := e.nodes[0]
	ns := e.pcNamespace(t)
	ctx := pcCtx(t)
	nodeObj, err := e.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := nodeObj.Status.Allocatable.Cpu().DeepCopy()
	cpu.Add(resource.MustParse("1"))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "toobig"}, Spec: corev1.PodSpec{
		NodeName: n.name, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "app", Image: "docker.io/library/busybox:1.35", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}}}},
	}}
	e.pcCreatePod(t, ns, pod)
	var rejected *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ns).Get(ctx, "toobig", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodFailed {
			return false, nil
		}
		rejected = p
		return true, nil
	}); err != nil {
		t.Fatalf("the kubelet did not reject the pod: %v", err)
	}
	t.Logf("the kubelet: %s: %s", rejected.Status.Reason, rejected.Status.Message)
	root := t.TempDir()
	r := e.pcRun(t, "run", "--auto", "-o", "json", "-r", n.endpoint, "--kubeconfig", e.kubeconfig, "--pod", ns+"/toobig",
		"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	// The kubelet's pod status: reason = the admit handler's, message
	// "Pod was rejected: " + its message (rejectPod).
	msg := strings.TrimPrefix(rejected.Status.Message, "Pod was rejected: ")
	if !strings.Contains(r.stdout, `"reason":"`+rejected.Status.Reason+`","message":"`+jsonString(msg)+`"`) {
		t.Errorf("podstep's rejection is not the kubelet's %s: %q", rejected.Status.Reason, msg)
	}
}
