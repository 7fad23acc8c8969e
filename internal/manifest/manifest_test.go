package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/golden"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// repoRoot is the module root, relative to this package's directory.
const repoRoot = "../.."

// loadRel loads a file named relative to the repository root, so that error
// messages show the same path wherever the test runs from.
func loadRel(t *testing.T, rel string) (*Bundle, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(rel, data)
}

func TestBadManifests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("found %d bad manifests, want at least 15", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			rel := "testdata/bad/" + filepath.Base(f)
			b, err := loadRel(t, rel)
			if err == nil {
				t.Fatalf("Parse(%s) succeeded with pod %q, want an error", rel, b.Pod.Name)
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("Parse(%s) error %T (%v), want *manifest.Error", rel, err, err)
			}
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%s) error is %T wrapping *Error, want *Error itself", rel, err)
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".err", err.Error()+"\n")
		})
	}
}

func TestGoodPods(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "pods", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d pods, want at least 5", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			// A pod copied from a cluster keeps its uid; the others get PodUID's.
			if b.Pod == nil || b.Pod.Name == "" || (len(b.Pod.UID) != 32 && !bytes.Contains(raw(t, f), []byte("\n  uid: "+string(b.Pod.UID)))) {
				t.Fatalf("bad pod: %+v", b.Pod)
			}
			for _, c := range append(b.Pod.Spec.InitContainers, b.Pod.Spec.Containers...) {
				if c.Image != "docker.io/library/busybox:1.35" || c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("container %s: image %q pull policy %q; the test containerd only has docker.io/library/busybox:1.35 (IfNotPresent)", c.Name, c.Image, c.ImagePullPolicy)
				}
			}
		})
	}
}

func TestHelloDefaults(t *testing.T) {
	b, err := loadRel(t, "testdata/pods/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if b.File != "testdata/pods/hello.yaml" {
		t.Errorf("File = %q", b.File)
	}
	if len(b.Digest) != 64 {
		t.Errorf("Digest = %q, want 64 hex characters", b.Digest)
	}
	if b.Node != nil || len(b.Secrets) != 0 || len(b.ConfigMaps) != 0 {
		t.Errorf("unexpected objects: node %v, secrets %v, configmaps %v", b.Node, b.Secrets, b.ConfigMaps)
	}
	p := b.Pod
	s := p.Spec
	checks := []struct {
		what      string
		got, want any
	}{
		{"name", p.Name, "hello"},
		{"namespace", p.Namespace, "default"},
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"terminationGracePeriodSeconds", deref(s.TerminationGracePeriodSeconds), int64(30)},
		{"securityContext set", s.SecurityContext != nil, true},
		{"enableServiceLinks", deref(s.EnableServiceLinks), true},
		{"containers", len(s.Containers), 1},
	}
	c := s.Containers[0]
	checks = append(checks, []struct {
		what      string
		got, want any
	}{
		{"container name", c.Name, "hello"},
		{"command", strings.Join(c.Command, " "), "sh -c echo hello from podstep; sleep 3600"},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
	}...)
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	// The UID is reproducible and depends on the content.
	b2, err := loadRel(t, "testdata/pods/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if b2.Pod.UID != p.UID {
		t.Errorf("UID not reproducible: %s then %s", p.UID, b2.Pod.UID)
	}
	data, _ := os.ReadFile(filepath.Join(repoRoot, "testdata", "pods", "hello.yaml"))
	b3, err := Parse("x.yaml", append(data, []byte("  # changed\n")...))
	if err != nil {
		t.Fatal(err)
	}
	if b3.Pod.UID == p.UID {
		t.Errorf("different content gave the same UID %s", p.UID)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestEnvPod(t *testing.T) {
	b, err := loadRel(t, "testdata/pods/env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := b.ConfigMap("default", "env-config")
	if !ok || cm.Data["greeting"] == "" {
		t.Fatalf("ConfigMap default/env-config = %v, %v", cm, ok)
	}
	p := b.Pod
	if u := p.Spec.SecurityContext.RunAsUser; u == nil || *u != 1000 {
		t.Errorf("runAsUser = %v", u)
	}
	c := p.Spec.Containers[0]
	if fr := c.Env[1].ValueFrom.FieldRef; fr.APIVersion != "v1" || fr.FieldPath != "metadata.name" {
		t.Errorf("fieldRef = %+v", fr)
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("memory limit = %s", q.String())
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("cpu request = %s", q.String())
	}
}

func TestDefaults(t *testing.T) {
	const m = `
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {user: YWRtaW4=, password: b2xk}
stringData: {password: s3cret}
---
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  capacity: {cpu: "4", memory: 8Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team}
spec:
  hostNetwork: true
  volumes:
  - name: scratch
  - name: conf
    configMap: {name: conf}
  - name: creds
    secret: {secretName: creds}
  - name: info
    downwardAPI:
      items: [{path: name, fieldRef: {fieldPath: metadata.name}}]
  - name: proj
    projected:
      sources: [{serviceAccountToken: {path: token}}]
  - name: host
    hostPath: {path: /var/log}
  initContainers:
  - name: init
    image: busybox
    resources:
      limits: {cpu: 500m}
  containers:
  - name: latest
    image: registry.local:5000/app:latest
    ports: [{containerPort: 80}]
    resources:
      requests: {cpu: 100m}
      limits: {cpu: 200m, memory: 64Mi}
    readinessProbe:
      httpGet: {port: 80}
  - name: digest
    image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
  - name: port
    image: registry.local:5000/app
`
	b, err := Parse("-", []byte(m))
	if err != nil {
		t.Fatal(err)
	}
	if b.File != "<stdin>" {
		t.Errorf("File = %q", b.File)
	}
	sec, ok := b.Secret("default", "creds")
	if !ok {
		t.Fatalf("no secret default/creds: %v", b.Secrets)
	}
	if sec.Type != corev1.SecretTypeOpaque || string(sec.Data["user"]) != "admin" || string(sec.Data["password"]) != "s3cret" || sec.StringData != nil {
		t.Errorf("secret = %+v", sec)
	}
	if b.Node == nil || b.Node.Status.Allocatable.Memory().String() != "8Gi" {
		t.Errorf("node = %+v", b.Node)
	}
	p := b.Pod
	if p.Namespace != "team" {
		t.Errorf("namespace = %q", p.Namespace)
	}
	v := p.Spec.Volumes
	mode := func(m *int32) int32 {
		if m == nil {
			return -1
		}
		return *m
	}
	if v[0].EmptyDir == nil || mode(v[1].ConfigMap.DefaultMode) != 0o644 || mode(v[2].Secret.DefaultMode) != 0o644 ||
		mode(v[3].DownwardAPI.DefaultMode) != 0o644 || v[3].DownwardAPI.Items[0].FieldRef.APIVersion != "v1" ||
		mode(v[4].Projected.DefaultMode) != 0o644 || *v[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 ||
		v[5].HostPath.Type == nil || *v[5].HostPath.Type != "" {
		t.Errorf("volume defaults wrong: %+v", v)
	}
	init := p.Spec.InitContainers[0]
	if init.ImagePullPolicy != corev1.PullAlways || init.Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("init container: pull %s requests %v", init.ImagePullPolicy, init.Resources.Requests)
	}
	c := p.Spec.Containers
	if c[0].ImagePullPolicy != corev1.PullAlways || c[1].ImagePullPolicy != corev1.PullIfNotPresent || c[2].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("pull policies: %s %s %s", c[0].ImagePullPolicy, c[1].ImagePullPolicy, c[2].ImagePullPolicy)
	}
	if r := c[0].Resources.Requests; r.Cpu().String() != "100m" || r.Memory().String() != "64Mi" {
		t.Errorf("requests = %v", r)
	}
	if pt := c[0].Ports[0]; pt.Protocol != corev1.ProtocolTCP || pt.HostPort != 80 {
		t.Errorf("port = %+v", pt)
	}
	if pr := c[0].ReadinessProbe; pr.PeriodSeconds != 10 || pr.TimeoutSeconds != 1 || pr.FailureThreshold != 3 || pr.SuccessThreshold != 1 || pr.HTTPGet.Path != "/" || pr.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("probe = %+v", pr)
	}
}

func TestExplicitUIDKept(t *testing.T) {
	b, err := Parse("u.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, uid: 1234}\nspec: {containers: [{name: a, image: busybox:1.35}]}\n"))
	if err == nil {
		t.Fatalf("numeric uid accepted: %v", b.Pod.UID)
	}
	b, err = Parse("u.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, uid: \"1234\"}\nspec: {containers: [{name: a, image: busybox:1.35}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Pod.UID != "1234" {
		t.Errorf("UID = %q", b.Pod.UID)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	var me *Error
	if !errors.As(err, &me) || me.Doc != 0 || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestLoadStdin(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, "testdata", "pods", "hello.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	b, err := Load("-")
	if err != nil {
		t.Fatal(err)
	}
	if b.File != "<stdin>" || b.Pod.Name != "hello" {
		t.Errorf("File %q pod %q", b.File, b.Pod.Name)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "pods/bad.yaml", Doc: 1, Kind: "Pod", Name: "web", Field: "spec.containers[0].image", Msg: "required value"}, `pods/bad.yaml: document 1 (Pod "web"): spec.containers[0].image: required value`},
		{Error{File: "f.yaml", Doc: 2, Kind: "Pod", Msg: "m"}, `f.yaml: document 2 (Pod): m`},
		{Error{File: "f.yaml", Msg: "m"}, `f.yaml: m`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func raw(t *testing.T, f string) []byte {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
