package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// The values the fake API server hands out: none may show anywhere.
const (
	apiToken    = "eyJhbGciOiJSUzI1NiJ9.ZmFrZS1hcGktdG9rZW4tN3Fa.c2lnbmF0dXJlLXh5eg"
	apiPassword = "Db-Pa55-from-the-API-9zQ"
)

// fakeAPI is an API server for the cmd tests: the objects of one pod, the
// TokenRequest answer, and the requests it got. The real one is
// test/cluster's; this keeps the flag and output paths in the unit tests.
type fakeAPI struct {
	objs   map[string]any // by URL path
	deny   string         // a path prefix answered 403
	mu     sync.Mutex
	counts map[string]int // "METHOD path" → requests
	tokens []authenticationv1.TokenRequest
}

func newFakeAPI() *fakeAPI {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "app", UID: "11111111-2222-3333-4444-555555555555", ResourceVersion: "42"},
		Spec: corev1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "web",
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
			Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptrTo[int32](0o644), Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	f := &fakeAPI{counts: map[string]int{}, objs: map[string]any{
		"/api/v1/namespaces/app/pods/web-1": pod,
		"/api/v1/namespaces/app/configmaps/settings": &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app", ResourceVersion: "7"}, Data: map[string]string{"MODE": "fast"}},
		"/api/v1/namespaces/app/configmaps/kube-root-ca.crt": &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "app", ResourceVersion: "8"}, Data: map[string]string{"ca.crt": "CA"}},
		"/api/v1/namespaces/app/secrets/db": &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app", ResourceVersion: "9"}, Data: map[string][]byte{"password": []byte(apiPassword)}},
		"/api/v1/nodes/node-a": &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "99"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		// the node's kubelet configuration, as a v1.37 kubelet's configz gives it (trimmed)
		"/api/v1/nodes/node-a/proxy/configz": `{"kubeletconfig":{"clusterDNS":["10.96.0.10"],"clusterDomain":"cluster.example",` +
			`"cgroupDriver":"cgroupfs","cgroupsPerQOS":true,"cgroupRoot":"/node-a","podLogsDir":"/var/log/pods"}}`,
		// The Services the kubelet turns into environment variables (run --pod reads them: the
		// pod's namespace's with enableServiceLinks, and default/kubernetes).
		"/api/v1/namespaces/app/services": &corev1.ServiceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceList"}},
		"/api/v1/namespaces/default/services/kubernetes": &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
			Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443}}}},
		"/api/v1/pods": &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{*pod}},
		"/api/v1/namespaces/app/events": &corev1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, Items: []corev1.Event{{
			ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: "app"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", UID: pod.UID},
			Type:           "Normal", Reason: "Started", Message: "Started container app\x1b[2J", Count: 1,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-a"}}}},
	}}
	return f
}

func ptrTo[T any](v T) *T { return &v }

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.counts[r.Method+" "+r.URL.Path]++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure",
			Code: int32(code), Reason: metav1.StatusReason(reason), Message: msg})
	}
	if f.deny != "" && strings.HasPrefix(r.URL.Path, f.deny) {
		status(403, "Forbidden", `serviceaccounts "web" is forbidden: User "someone" cannot create resource "serviceaccounts/token" in API group "" in the namespace "app"`)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/app/serviceaccounts/web/token" {
		// client-go sends protobuf or JSON: the scheme's decoder reads both.
		var tr authenticationv1.TokenRequest
		body, _ := io.ReadAll(r.Body)
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &tr); err != nil {
			status(400, "BadRequest", err.Error())
			return
		}
		f.mu.Lock()
		f.tokens = append(f.tokens, tr)
		f.mu.Unlock()
		tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
		tr.Status.Token = apiToken
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(tr)
		return
	}
	if raw, ok := f.objs[r.URL.Path].(string); ok && r.Method == http.MethodGet {
		_, _ = io.WriteString(w, raw) // a body as is (configz)
		return
	}
	if o, ok := f.objs[r.URL.Path]; ok && r.Method == http.MethodGet {
		_ = json.NewEncoder(w).Encode(o)
		return
	}
	status(404, "NotFound", r.URL.Path+" not found")
}

// kubeconfigFor writes a kubeconfig for server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: " + server +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: admin\n"
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunPodFromAPI: run --pod on the simulated runtime reads the pod and
// what it references once each, mints its token bound to the cluster's pod,
// shows where each object came from and the cluster's view, and never shows
// the token or the Secret's value (text, JSON, recording, stderr).
func TestRunPodFromAPI(t *testing.T) {
	api := newFakeAPI()
	srv := httptest.NewServer(api)
	defer srv.Close()
	kc := kubeconfigFor(t, srv.URL)
	root, logs := dirs(t)
	recFile := filepath.Join(t.TempDir(), "run.rec")
	outputs := map[string]string{}
	for _, format := range []string{"text", "json"} {
		args := []string{"run", "--auto", "--sim", "--no-color", "-o", format, "--grace-period", "0", "--settle", "0",
			"--kubeconfig", kc, "--pod", "app/web-1", "--root-dir", root, "--log-dir", logs}
		if format == "json" {
			args = append(args, "--record", recFile)
		}
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", format, code, stderr, stdout)
		}
		outputs[format+" stdout"], outputs[format+" stderr"] = stdout, stderr
	}
	rec, err := os.ReadFile(recFile)
	if err != nil {
		t.Fatal(err)
	}
	outputs["recording"] = string(rec)
	assertNoSecrets(t, outputs, secretForms(apiToken, apiPassword))

	// The steps' details (JSON) say where each object came from.
	for _, want := range []string{
		"from the API server " + srv.URL + " (resourceVersion 8)",             // kube-root-ca.crt in the volumes step
		"TokenRequest for serviceaccount app/web",                             // the token's detail
		"node node-a from the API server " + srv.URL + ", resourceVersion 99", // admission's node
	} {
		if !strings.Contains(outputs["json stdout"], want) {
			t.Errorf("JSON output lacks %q:\n%s", want, outputs["json stdout"])
		}
	}
	text := outputs["text stdout"]
	for _, want := range []string{
		"cluster's view of pod/app/web-1",                           // the view
		"Started container app",                                     // the kubelet's event
		"beside the kubelet's 11111111-2222-3333-4444-555555555555", // item 6: names
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Error("a control character from the API server reached the output")
	}
	if !strings.Contains(outputs["text stderr"], "fetched from API server") {
		t.Errorf("stderr does not say what was fetched: %s", outputs["text stderr"])
	}
	var sum struct {
		Type    string `json:"type"`
		UID     string `json:"uid"`
		Cluster struct {
			UID    string `json:"uid"`
			Phase  string `json:"phase"`
			Events []struct{ Reason string }
		} `json:"cluster"`
	}
	lines := strings.Split(strings.TrimSpace(outputs["json stdout"]), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" {
		t.Fatalf("last JSON line: %v: %s", err, lines[len(lines)-1])
	}
	if sum.Cluster.UID != "11111111-2222-3333-4444-555555555555" || sum.UID == sum.Cluster.UID || sum.Cluster.Phase != "Running" || len(sum.Cluster.Events) != 1 {
		t.Errorf("summary: uid %s, cluster %+v", sum.UID, sum.Cluster)
	}
	// Tokens bound to the cluster's pod, as the kubelet binds them.
	for _, tr := range api.tokens {
		if ref := tr.Spec.BoundObjectRef; ref == nil || ref.UID != "11111111-2222-3333-4444-555555555555" || *tr.Spec.ExpirationSeconds != 3607 {
			t.Errorf("TokenRequest %+v", tr.Spec)
		}
	}
	// One request per referenced object per run (two runs); the pod twice
	// per run: its spec first, its status for the view at the end.
	for k, n := range api.counts {
		want := 2
		if k == "GET /api/v1/namespaces/app/pods/web-1" {
			want = 4
		}
		if n > want {
			t.Errorf("%d requests %s in two runs, want at most %d", n, k, want)
		}
	}
}

// TestRunPodDenied: a TokenRequest the API server refuses is one clear
// message naming the verb and resource, exit 2, before any runtime is
// contacted (the endpoint named does not exist: contacting it is exit 3);
// an API server that does not answer is exit 3, before the runtime too.
func TestRunPodDenied(t *testing.T) {
	api := newFakeAPI()
	api.deny = "/api/v1/namespaces/app/serviceaccounts/web/token"
	srv := httptest.NewServer(api)
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	root, logs := dirs(t)
	for _, tt := range []struct {
		name, server string
		code         int
		want         string
	}{
		{"denied", srv.URL, 2, `denied "create" on "serviceaccounts/token" (web) in namespace "app": podstep needs create serviceaccounts/token: see deploy/clusterrole.yaml`},
		{"unreachable", closedURL, 3, "unreachable (get pods web-1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "run", "--auto", "-r", "unix:///nonexistent/podstep-test.sock", "--kubeconfig", kubeconfigFor(t, tt.server),
				"--pod", "app/web-1", "--root-dir", root, "--log-dir", logs)
			if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q (stdout %q); want exit %d and one line with %q", code, stderr, stdout, tt.code, tt.want)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("the root dir %s was made: %v", root, err)
			}
		})
	}
}

// TestRunPodNodeConfigz: run --pod takes cluster DNS, cluster domain,
// cgroup driver and cgroup root from the pod's node's kubelet (configz
// through the API server): the sandbox's DNS config is the node's, with no
// MissingClusterDNS, and the step says where each value came from; a flag
// given wins; configz denied (nodes/proxy) is one warning and podstep's
// defaults (the host's resolv.conf, MissingClusterDNS as a kubelet without
// clusterDNS gives).
func TestRunPodNodeConfigz(t *testing.T) {
	for _, tt := range []struct {
		name, deny string
		flags      []string
		want, not  []string
	}{
		{name: "configz", want: []string{`"servers":["10.96.0.10"]`, `cluster.example`, `{"key":"cluster DNS","value":"10.96.0.10 from configz of node node-a"}`,
			`{"key":"cgroup root","value":"/node-a from configz of node node-a"}`, "clusterDNS 10.96.0.10, clusterDomain cluster.example"},
			not: []string{"MissingClusterDNS", "warning"}},
		{name: "flag wins", flags: []string{"--cluster-dns", "10.0.0.53"},
			want: []string{`"servers":["10.0.0.53"]`, `{"key":"cluster DNS","value":"10.0.0.53 from --cluster-dns"}`, "clusterDNS from --cluster-dns (the node's: 10.96.0.10)"},
			not:  []string{"MissingClusterDNS", `"servers":["10.96.0.10"]`}},
		{name: "denied", deny: "/api/v1/nodes/node-a/proxy",
			want: []string{"MissingClusterDNS", `podstep: warning: the kubelet configuration of node node-a (configz): API server`, `denied "get" on "nodes/proxy"`},
			not:  []string{"10.96.0.10", "from configz"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI()
			api.deny = tt.deny
			srv := httptest.NewServer(api)
			defer srv.Close()
			root, logs := dirs(t)
			args := append([]string{"run", "--auto", "--sim", "--no-color", "-o", "json", "--grace-period", "0", "--settle", "0",
				"--kubeconfig", kubeconfigFor(t, srv.URL), "--pod", "app/web-1", "--root-dir", root, "--log-dir", logs}, tt.flags...)
			code, stdout, stderr := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stderr, stdout)
			}
			all := stdout + stderr
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q\nstderr: %s", w, stderr)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(all, n) {
					t.Errorf("output has %q\nstderr: %s", n, stderr)
				}
			}
			if n := strings.Count(stderr, "warning"); n > 1 {
				t.Errorf("%d warnings, want at most one: %s", n, stderr)
			}
		})
	}
}
