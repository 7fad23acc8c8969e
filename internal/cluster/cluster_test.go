package cluster

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/manifest"
)

const testToken = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln"

func ptr[T any](v T) *T { return &v }

// clusterPod is a Deployment's pod as the API server has it.
func clusterPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "app", UID: "11111111-2222-3333-4444-555555555555", ResourceVersion: "42"},
		Spec: corev1.PodSpec{
			NodeName:           "node-a",
			ServiceAccountName: "web",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "regcred"}},
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Env: []corev1.EnvVar{
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
					{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
				},
				EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
			Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				{Name: "gone", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}},
				{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func otherPod(name, nodeName string, uid types.UID, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "other", UID: uid},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// fixture is a fake API server with the pod's objects; tokens minted are
// recorded in reqs.
func fixture(t *testing.T) (*Client, *fake.Clientset, *[]*authenticationv1.TokenRequest) {
	t.Helper()
	objs := []runtime.Object{
		clusterPod(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app", ResourceVersion: "7"}, Data: map[string]string{"mode": "fast"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "app", ResourceVersion: "8"}, Data: map[string]string{"ca.crt": "CA"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app", ResourceVersion: "9"}, Data: map[string][]byte{"password": []byte("hunter2-secret")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "app", ResourceVersion: "10"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"registry.example":{"username":"u","password":"regpass-secret"}}}`)}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "99", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoExecute}}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}}},
		otherPod("running", "node-a", "u1", corev1.PodRunning),
		otherPod("done", "node-a", "u2", corev1.PodSucceeded),
		otherPod("elsewhere", "node-b", "u3", corev1.PodRunning),
	}
	cs := fake.NewClientset(objs...)
	var minted []*authenticationv1.TokenRequest
	cs.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		minted = append(minted, tr)
		tr.Status.Token = testToken
		return true, tr, nil
	})
	return NewForTest(kubefake.New(cs), "https://api.test:6443"), cs, &minted
}

func TestReferences(t *testing.T) {
	var got []string
	for _, r := range references(clusterPod()) {
		got = append(got, r.kind+" "+r.name)
	}
	want := "ConfigMap settings,Secret missing,ConfigMap kube-root-ca.crt,Secret db,Secret regcred"
	if strings.Join(got, ",") != want {
		t.Errorf("references = %s\nwant %s", strings.Join(got, ","), want)
	}
}

func TestResolvePod(t *testing.T) {
	c, cs, minted := fixture(t)
	ctx := context.Background()
	b, cp, err := c.GetPod(ctx, "app", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Resolve(ctx, b, cp, ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The engine's pod is podstep's own; the token is bound to the cluster's.
	if b.Pod.UID != ReplayUID(cp.UID) || b.Pod.UID == cp.UID {
		t.Errorf("bundle pod UID %s, want ReplayUID(%s)", b.Pod.UID, cp.UID)
	}
	if len(*minted) != 1 {
		t.Fatalf("%d TokenRequests, want 1", len(*minted))
	}
	tr := (*minted)[0]
	if ref := tr.Spec.BoundObjectRef; ref == nil || ref.UID != cp.UID || ref.Name != "web-1" || ref.Kind != "Pod" {
		t.Errorf("bound object %+v, want pod web-1 uid %s", tr.Spec.BoundObjectRef, cp.UID)
	}
	if tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != 3607 || len(tr.Spec.Audiences) != 0 {
		t.Errorf("token spec %+v, want expirationSeconds 3607, no audience", tr.Spec)
	}
	// The volume plugin's request (bound to podstep's UID) finds the cached token.
	got, err := r.Tokens.GetServiceAccountToken("app", "web", tokenRequest(b.Pod, b.Pod.Spec.Volumes[2].Projected.Sources[0].ServiceAccountToken))
	if err != nil || got.Status.Token != testToken || len(*minted) != 1 {
		t.Errorf("cached token: %v, %v, %d requests", got, err, len(*minted))
	}
	for _, k := range []string{"app/settings", "app/kube-root-ca.crt"} {
		if _, ok := b.ConfigMaps[k]; !ok {
			t.Errorf("ConfigMap %s not in the bundle", k)
		}
	}
	for _, k := range []string{"app/db", "app/regcred"} {
		if _, ok := b.Secrets[k]; !ok {
			t.Errorf("Secret %s not in the bundle", k)
		}
	}
	if _, ok := b.Secrets["app/missing"]; ok {
		t.Error("the missing Secret is in the bundle")
	}
	if o := b.Origin(manifest.KindSecret, "app", "db"); o != "the API server https://api.test:6443 (resourceVersion 9)" {
		t.Errorf("origin of secret db = %q", o)
	}
	// Node: the API server's, with the one other active pod on it.
	if r.Node == nil || r.Node.Name() != "node-a" || len(r.Node.Object.Spec.Taints) != 1 {
		t.Fatalf("node %+v", r.Node)
	}
	if len(r.Node.Existing) != 1 || r.Node.Existing[0].Name != "running" {
		var names []string
		for _, p := range r.Node.Existing {
			names = append(names, p.Name)
		}
		t.Errorf("other pods on the node = %v, want [running]", names)
	}
	if !strings.Contains(r.Node.Source, "resourceVersion 99") {
		t.Errorf("node source %q", r.Node.Source)
	}
	// At most one request per referenced object: pod, 2 ConfigMaps, 3
	// Secrets (one missing), 1 token, the node, the node's pods.
	counts := map[string]int{}
	for _, a := range cs.Actions() {
		key := a.GetVerb() + " " + a.GetResource().Resource + "/" + a.GetSubresource()
		if g, ok := a.(clienttesting.GetAction); ok {
			key += " " + g.GetName()
		}
		counts[key]++
	}
	for k, n := range counts {
		if n > 1 {
			t.Errorf("%d requests %s, want at most 1", n, k)
		}
	}
	if len(cs.Actions()) != 9 {
		t.Errorf("%d requests, want 9: %v", len(cs.Actions()), counts)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "secrets" {
			t.Error("listed secrets")
		}
	}
}

// TestResolveManifest: a manifest's own objects are not fetched, and its
// pod, not in the cluster, gets unbound tokens.
func TestResolveManifest(t *testing.T) {
	c, cs, minted := fixture(t)
	pod := clusterPod()
	pod.UID = "0123456789abcdef0123456789abcdef"
	pod.Spec.ImagePullSecrets = nil
	if err := cs.Tracker().Add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}); err != nil {
		t.Fatal(err)
	}
	b := &manifest.Bundle{Pod: pod, Secrets: map[string]*corev1.Secret{"app/db": {ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}}}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	r, err := c.Resolve(context.Background(), b, nil, ResolveOptions{NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Pod.UID != "0123456789abcdef0123456789abcdef" {
		t.Errorf("UID changed to %s for a pod that is not the cluster's", b.Pod.UID)
	}
	if (*minted)[0].Spec.BoundObjectRef != nil {
		t.Errorf("token bound to %+v; the pod is not in the cluster", (*minted)[0].Spec.BoundObjectRef)
	}
	for _, a := range cs.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetResource().Resource == "secrets" && g.GetName() == "db" {
			t.Error("fetched Secret db, which the manifest has")
		}
		if a.GetResource().Resource == "nodes" {
			t.Error("fetched the node with NoNode")
		}
	}
	if len(b.Pod.Spec.ImagePullSecrets) != 1 || b.Pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets %v, want the service account's [regcred]", b.Pod.Spec.ImagePullSecrets)
	}
	if _, ok := b.Secrets["app/regcred"]; !ok {
		t.Error("the service account's pull secret was not fetched")
	}
	if r.Node != nil || len(r.Notes) == 0 {
		t.Errorf("node %v, notes %v", r.Node, r.Notes)
	}
}

func TestAccessDenied(t *testing.T) {
	tests := []struct {
		verb, resource, sub string
		want                string
	}{
		{"create", "serviceaccounts", "token", `denied "create" on "serviceaccounts/token" (web) in namespace "app": podstep needs create serviceaccounts/token`},
		{"get", "secrets", "", `denied "get" on "secrets" (missing) in namespace "app"`},
		{"get", "nodes", "", `denied "get" on "nodes" (node-a):`},
		{"list", "pods", "", `denied "list" on "pods" (fieldSelector spec.nodeName=node-a,`},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.resource, func(t *testing.T) {
			c, cs, _ := fixture(t)
			cs.PrependReactor(tt.verb, tt.resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != tt.sub {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tt.resource}, "x", errors.New("RBAC: access denied"))
			})
			b, cp, err := c.GetPod(context.Background(), "app", "web-1")
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Resolve(context.Background(), b, cp, ResolveOptions{})
			var ae *AccessError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *AccessError", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "deploy/clusterrole.yaml") {
				t.Errorf("message %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	writeKubeconfig(t, kc, "closed", map[string]string{"closed": "https://127.0.0.1:1"}, "")
	c, err := Connect(Options{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.GetPod(context.Background(), "app", "web-1")
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want *UnreachableError", err, err)
	}
	if len(c.Requests()) == 0 {
		t.Error("the counting transport saw no request")
	}
}

func writeKubeconfig(t *testing.T, path, current string, servers map[string]string, ns string) {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + current + "\nclusters:\n")
	for name, s := range servers {
		sb.WriteString("- name: " + name + "\n  cluster:\n    server: " + s + "\n    insecure-skip-tls-verify: true\n")
	}
	sb.WriteString("contexts:\n")
	for name := range servers {
		sb.WriteString("- name: " + name + "\n  context:\n    cluster: " + name + "\n    user: u\n")
		if ns != "" {
			sb.WriteString("    namespace: " + ns + "\n")
		}
	}
	sb.WriteString("users:\n- name: u\n  user:\n    token: abc\n")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConnect: --kubeconfig, KUBECONFIG (merged), ~/.kube/config and
// --context, as kubectl resolves them.
func TestConnect(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(home, ".kube", "config"), "home", map[string]string{"home": "https://home:6443"}, "")
	a := filepath.Join(dir, "a")
	writeKubeconfig(t, a, "a1", map[string]string{"a1": "https://a1:6443", "a2": "https://a2:6443"}, "team")
	tests := []struct {
		name, env string
		o         Options
		server    string
		ns        string
		err       string
	}{
		{name: "home", server: "https://home:6443", ns: "default"},
		{name: "KUBECONFIG", env: a, server: "https://a1:6443", ns: "team"},
		{name: "context", env: a, o: Options{Context: "a2"}, server: "https://a2:6443", ns: "team"},
		{name: "flag wins", env: filepath.Join(home, ".kube", "config"), o: Options{Kubeconfig: a}, server: "https://a1:6443"},
		{name: "no context", o: Options{Context: "nope"}, err: `context "nope" does not exist`},
		{name: "no file", o: Options{Kubeconfig: filepath.Join(dir, "none")}, err: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := homeFile
			homeFile = filepath.Join(home, ".kube", "config")
			defer func() { homeFile = old }()
			t.Setenv("KUBECONFIG", tt.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			c, err := Connect(tt.o)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != tt.server || (tt.ns != "" && c.Namespace != tt.ns) {
				t.Errorf("server %s ns %s, want %s %s", c.Server, c.Namespace, tt.server, tt.ns)
			}
		})
	}
}

func TestReplayUID(t *testing.T) {
	a, b := ReplayUID("11111111-2222-3333-4444-555555555555"), ReplayUID("11111111-2222-3333-4444-555555555556")
	if a == b || a != ReplayUID("11111111-2222-3333-4444-555555555555") {
		t.Errorf("ReplayUID not a function of the uid: %s %s", a, b)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(string(a)) {
		t.Errorf("ReplayUID %s is not a version-5 UUID", a)
	}
}

func TestView(t *testing.T) {
	c, cs, _ := fixture(t)
	pod := clusterPod()
	ev := func(name, reason, msg string, sec int64) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "web-1", UID: pod.UID},
			Type:           "Warning", Reason: reason, Message: msg, Count: 1,
			Source:        corev1.EventSource{Component: "kubelet", Host: "node-a"},
			LastTimestamp: metav1.Unix(1700000000+sec, 0)}
	}
	for _, e := range []*corev1.Event{
		ev("b", "FailedMount", "MountVolume.SetUp failed for volume \"gone\" : secret \"missing\" not found\x1b[31m hunter2-secret", 10),
		ev("a", "Scheduled", "Successfully assigned", 0),
	} {
		if err := cs.Tracker().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.View(context.Background(), "app", "web-1", "replay", func(s string) string { return strings.ReplaceAll(s, "hunter2-secret", "<redacted>") })
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Events) != 2 || v.Events[0].Reason != "Scheduled" || v.Events[1].Reason != "FailedMount" {
		t.Fatalf("events %+v", v.Events)
	}
	m := v.Events[1].Message
	if strings.Contains(m, "\x1b") || strings.Contains(m, "hunter2") || !strings.Contains(m, `secret "missing" not found`) {
		t.Errorf("message %q: want control characters and the secret gone", m)
	}
	if v.Events[1].Source != "kubelet node-a" || v.Phase != "Pending" || len(v.Containers) != 1 {
		t.Errorf("view %+v", v)
	}
	var sel string
	for _, a := range cs.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok && a.GetResource().Resource == "events" {
			sel = l.GetListRestrictions().Fields.String()
		}
	}
	if sel != "involvedObject.uid="+string(pod.UID) {
		t.Errorf("events listed with field selector %q", sel)
	}
}

// TestOneKubeconfigLoader: Load is podstep's only kubeconfig loader: no other
// package of podstep (internal/, cmd/) imports clientcmd outside its tests,
// so run --pod and fleet find the same cluster the same way.
func TestOneKubeconfigLoader(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
				filepath.Dir(p) == filepath.Clean("../../internal/cluster") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if strings.Trim(imp.Path.Value, `"`) == "k8s.io/client-go/tools/clientcmd" {
					t.Errorf("%s imports clientcmd: load kubeconfigs with cluster.Load", p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestResolveServices: with Services, Resolve reads the Services whose env
// vars the kubelet adds (getServiceEnvVarMap): the pod's namespace's (list)
// with enableServiceLinks, and default/kubernetes (get, unless the list of
// namespace default has it); a kubernetes Service that is not there is
// none; a denied list is an *AccessError naming list services.
func TestResolveServices(t *testing.T) {
	master := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", ResourceVersion: "3"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1"}}
	db := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4"}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "other"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.9.9"}}
	for _, tt := range []struct {
		name     string
		ns       string
		links    bool
		objs     []runtime.Object
		deny     bool
		want     string // the bundle's Services
		requests string // the services requests, in order
		err      string
	}{
		{name: "links: the namespace's and kubernetes", ns: "app", links: true, objs: []runtime.Object{master, db, other},
			want: "app/db,default/kubernetes", requests: "list services app,get services default/kubernetes"},
		{name: "no links: kubernetes only", ns: "app", links: false, objs: []runtime.Object{master, db, other},
			want: "default/kubernetes", requests: "get services default/kubernetes"},
		{name: "namespace default with links: the list has kubernetes", ns: "default", links: true, objs: []runtime.Object{master, other},
			want: "default/kubernetes", requests: "list services default"},
		{name: "no kubernetes Service", ns: "app", links: false, objs: []runtime.Object{db},
			want: "", requests: "get services default/kubernetes"},
		{name: "list denied", ns: "app", links: true, objs: []runtime.Object{master}, deny: true,
			err: `denied "list" on "services" in namespace "app": podstep needs list services`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objs...)
			if tt.deny {
				cs.PrependReactor("list", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", errors.New("RBAC: access denied"))
				})
			}
			c := NewForTest(kubefake.New(cs), "https://api.test:6443")
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tt.ns, UID: "0123"},
				Spec: corev1.PodSpec{EnableServiceLinks: &tt.links, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			b := &manifest.Bundle{Pod: pod, Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
			_, err := c.Resolve(context.Background(), b, nil, ResolveOptions{NoNode: true, NoTokens: true, Services: true})
			if tt.err != "" {
				var ae *AccessError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want an *AccessError with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range b.Services {
				got = append(got, s.Namespace+"/"+s.Name)
			}
			if strings.Join(got, ",") != tt.want || b.Services == nil {
				t.Errorf("Services %v (nil %v), want %q (not nil: the API server was asked)", got, b.Services == nil, tt.want)
			}
			var reqs []string
			for _, a := range cs.Actions() {
				if a.GetResource().Resource != "services" {
					continue
				}
				r := a.GetVerb() + " services " + a.GetNamespace()
				if g, ok := a.(clienttesting.GetAction); ok {
					r += "/" + g.GetName()
				}
				reqs = append(reqs, r)
			}
			if strings.Join(reqs, ",") != tt.requests {
				t.Errorf("requests %v, want %s", reqs, tt.requests)
			}
		})
	}
}
