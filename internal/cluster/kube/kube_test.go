package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// apiServer answers each request from answers (by "METHOD path"), with a
// 404 Status otherwise, and records the requests (method, path and query,
// body).
type apiServer struct {
	mu   sync.Mutex
	seen []string
	body map[string]string
}

func newAPIServer(t *testing.T, answers map[string]func(w http.ResponseWriter)) (*apiServer, API) {
	t.Helper()
	s := &apiServer{body: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.Path
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI())
		s.body[key] = string(b)
		s.mu.Unlock()
		if a, ok := answers[key]; ok {
			a(w)
			return
		}
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound)
	}))
	t.Cleanup(srv.Close)
	api, err := New(&rest.Config{Host: srv.URL, QPS: 100, Burst: 200})
	if err != nil {
		t.Fatal(err)
	}
	return s, api
}

func jsonAnswer(obj any) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: string(reason),
	})
}

// TestRequests: each call sends the typed clientset's request (path, query)
// and decodes the answer, or gives apierrors' error.
func TestRequests(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", UID: "u1"}}
	driver := &storagev1.CSIDriver{TypeMeta: metav1.TypeMeta{Kind: "CSIDriver", APIVersion: "storage.k8s.io/v1"}, ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{*pod}}
	token := &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
		Status: authenticationv1.TokenRequestStatus{Token: "t0k"}}
	s, api := newAPIServer(t, map[string]func(http.ResponseWriter){
		"GET /api/v1/namespaces/app/pods/web":                    jsonAnswer(pod),
		"GET /apis/storage.k8s.io/v1/csidrivers/csi.example.com": jsonAnswer(driver),
		"GET /api/v1/pods": jsonAnswer(list),
		"POST /api/v1/namespaces/app/serviceaccounts/default/token": jsonAnswer(token),
		"POST /api/v1/namespaces/app/configmaps":                    jsonAnswer(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "cm", UID: "u2"}}),
		"DELETE /api/v1/namespaces/app/pods/web":                    jsonAnswer(&metav1.Status{Status: metav1.StatusSuccess}),
		"GET /api/v1/namespaces/app/secrets/denied":                 func(w http.ResponseWriter) { status(w, http.StatusForbidden, metav1.StatusReasonForbidden) },
		"GET /api/v1/namespaces/app/pods/web/log":                   func(w http.ResponseWriter) { _, _ = io.WriteString(w, "line 1\nline 2\n") },
		"GET /api/v1/nodes/n1/proxy/configz":                        func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"kubeletconfig":{}}`) },
		"GET /apis/apps/v1/namespaces/app/deployments": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			ev := func(typ watch.EventType, name string) {
				b, _ := json.Marshal(map[string]any{"type": typ, "object": &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}})
				_, _ = w.Write(append(b, '\n'))
			}
			ev(watch.Added, "a")
			ev(watch.Deleted, "a")
		},
	})
	ctx := context.Background()

	got, err := Get[corev1.Pod](ctx, api, Pods, "app", "web")
	if err != nil || got.UID != "u1" {
		t.Errorf("Get pod: %v, %v", got, err)
	}
	if d, err := Get[storagev1.CSIDriver](ctx, api, CSIDrivers, "", "csi.example.com"); err != nil || d.Name != "csi.example.com" {
		t.Errorf("Get csidriver: %v, %v", d, err)
	}
	if _, err := Get[corev1.Pod](ctx, api, Pods, "app", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("Get a missing pod: %v, want NotFound", err)
	}
	if _, err := Get[corev1.Secret](ctx, api, Secrets, "app", "denied"); !apierrors.IsForbidden(err) {
		t.Errorf("Get a denied secret: %v, want Forbidden", err)
	}
	if l, err := List[corev1.PodList](ctx, api, Pods, "", metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil || len(l.Items) != 1 {
		t.Errorf("List pods: %v, %v", l, err)
	}
	out := &authenticationv1.TokenRequest{}
	if err := api.Create(ctx, ServiceAccounts, "app", "default", "token", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}}}, out); err != nil || out.Status.Token != "t0k" {
		t.Errorf("Create token: %v, %v", out, err)
	}
	if cm, err := Create(ctx, api, ConfigMaps, "app", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}); err != nil || cm.UID != "u2" {
		t.Errorf("Create configmap: %v, %v", cm, err)
	}
	if err := api.Delete(ctx, Pods, "app", "web", metav1.DeleteOptions{}); err != nil {
		t.Errorf("Delete: %v", err)
	}
	rc, err := api.Logs(ctx, "app", "web", &corev1.PodLogOptions{Container: "c", Follow: true})
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "line 1\nline 2\n" {
		t.Errorf("Logs: %q", b)
	}
	if raw, err := api.Raw(ctx, "/api/v1/nodes", "n1", "proxy", "configz"); err != nil || !strings.Contains(string(raw), "kubeletconfig") {
		t.Errorf("Raw: %q, %v", raw, err)
	}
	w, err := api.Watch(ctx, Deployments, "app", metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "7", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	var evs []string
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			evs = append(evs, string(ev.Type)+" "+p.Name)
		}
	}
	if strings.Join(evs, ",") != "ADDED a,DELETED a" {
		t.Errorf("Watch events: %v", evs)
	}

	want := []string{
		"GET /api/v1/namespaces/app/pods/web",
		"GET /apis/storage.k8s.io/v1/csidrivers/csi.example.com",
		"GET /api/v1/namespaces/app/pods/gone",
		"GET /api/v1/namespaces/app/secrets/denied",
		"GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1",
		"POST /api/v1/namespaces/app/serviceaccounts/default/token",
		"POST /api/v1/namespaces/app/configmaps",
		"DELETE /api/v1/namespaces/app/pods/web",
		"GET /api/v1/namespaces/app/pods/web/log?container=c&follow=true",
		"GET /api/v1/nodes/n1/proxy/configz",
		"GET /apis/apps/v1/namespaces/app/deployments?allowWatchBookmarks=true&labelSelector=a%3Db&resourceVersion=7&watch=true",
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Join(s.seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(s.seen, "\n"), strings.Join(want, "\n"))
	}
	if b := s.body["POST /api/v1/namespaces/app/serviceaccounts/default/token"]; !strings.Contains(b, `"kind":"TokenRequest"`) || !strings.Contains(b, `"audiences":["api"]`) {
		t.Errorf("token request body: %s", b)
	}
	if b := s.body["POST /api/v1/namespaces/app/configmaps"]; !strings.Contains(b, `"apiVersion":"v1"`) || !strings.Contains(b, `"kind":"ConfigMap"`) {
		t.Errorf("configmap body: %s", b)
	}
}

// TestScheme: the scheme has the groups podstep reads and no others.
func TestScheme(t *testing.T) {
	s := NewScheme()
	for _, r := range []Resource{Pods, Deployments, Jobs, CronJobs, CSIDrivers, VolumeAttachments} {
		if !s.Recognizes(r.GVK()) {
			t.Errorf("scheme does not know %s", r.GVK())
		}
	}
	if s.IsGroupRegistered("networking.k8s.io") {
		t.Errorf("scheme has networking.k8s.io: only the groups podstep reads")
	}
}
