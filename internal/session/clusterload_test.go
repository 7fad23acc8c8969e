package session

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer answers the requests of `run --pod ns/web` for a pod bound to
// a Ready node n1 (JSON, over plain HTTP), and counts them by path.
func apiServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "11111111-2222-3333-4444-555555555555", ResourceVersion: "5"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "6"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	master := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", ResourceVersion: "7"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	services := &corev1.ServiceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceList"}, ListMeta: metav1.ListMeta{ResourceVersion: "8"},
		Items: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4", Ports: []corev1.ServicePort{{Port: 5432}}}}}}
	answers := map[string]any{
		"/api/v1/namespaces/ns/pods/web":                 pod,
		"/api/v1/namespaces/ns/services":                 services,
		"/api/v1/namespaces/default/services/kubernetes": master,
		"/api/v1/nodes/n1":                               node,
		"/api/v1/pods":                                   &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}},
		"/api/v1/nodes/n1/proxy/configz":                 map[string]any{"kubeletconfig": map[string]any{"clusterDNS": []string{"10.96.0.10"}, "clusterDomain": "cluster.local"}},
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		a, ok := answers[r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// TestLoadClusterCountsEveryRequest: run --pod's fetched line counts every
// request sent, the node's configz too (it is read before the line is
// made), and names it; the Services of the pod's env vars are read (the
// namespace's list, default/kubernetes) into the bundle.
func TestLoadClusterCountsEveryRequest(t *testing.T) {
	srv, seen := apiServer(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: "+srv.URL+
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &Options{Pod: "ns/web", Kubeconfig: kc}
	var stderr bytes.Buffer
	b, err := o.loadCluster(context.Background(), nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	reqs := seen()
	if len(reqs) != 6 || reqs[len(reqs)-1] != "GET /api/v1/nodes/n1/proxy/configz" {
		t.Fatalf("requests %v: want 6, configz last", reqs)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr %q: want the fetched line and the configz line", stderr.String())
	}
	for _, want := range []string{"(6 requests)", "services of namespace ns (1, for env vars)", "service default/kubernetes@7", "configz of node n1"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("fetched line %q lacks %q", lines[0], want)
		}
	}
	if !strings.Contains(lines[1], "clusterDNS 10.96.0.10") {
		t.Errorf("configz line %q", lines[1])
	}
	var names []string
	for _, s := range b.Services {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if strings.Join(names, ",") != "ns/db,default/kubernetes" {
		t.Errorf("bundle Services %v, want ns/db and default/kubernetes", names)
	}
}
