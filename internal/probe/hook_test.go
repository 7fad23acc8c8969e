package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var hookPod = &corev1.Pod{}

func init() {
	hookPod.Name, hookPod.Namespace, hookPod.UID = "web", "default", "uid-1"
}

func TestHookHTTPGet(t *testing.T) {
	srv, host, port := newServer(t)
	dead := closedPort(t)
	container := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}

	tests := []struct {
		name    string
		action  corev1.HTTPGetAction
		podIP   string
		code    int
		message string
	}{
		{name: "200", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("web")}, podIP: host, code: 200},
		{name: "500 still succeeds", action: corev1.HTTPGetAction{Path: "/500", Port: intstr.FromInt(port)}, podIP: host, code: 500},
		{name: "404 still succeeds", action: corev1.HTTPGetAction{Path: "/404", Port: intstr.FromInt(port)}, podIP: host, code: 404},
		{name: "redirect to other host stops, succeeds", action: corev1.HTTPGetAction{Path: "/redirect-other", Port: intstr.FromInt(port)}, podIP: host, code: 302},
		{name: "same-host redirect followed", action: corev1.HTTPGetAction{Path: "/redirect-same", Port: intstr.FromInt(port)}, podIP: host, code: 200},
		{name: "refused", action: corev1.HTTPGetAction{Path: "/hook", Port: intstr.FromInt(dead)}, podIP: "127.0.0.1",
			message: fmt.Sprintf(`HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:%d/hook": dial tcp 127.0.0.1:%d: connect: connection refused`, dead, dead)},
		{name: "unknown port name", action: corev1.HTTPGetAction{Path: "/hook", Port: intstr.FromString("admin")}, podIP: host,
			message: `HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(uid-1)" failed - error: strconv.Atoi: parsing "admin": invalid syntax`},
		{name: "no host, no pod IP", action: corev1.HTTPGetAction{Path: "/hook", Port: intstr.FromInt(port)},
			message: `HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(uid-1)" failed - error: failed to find networking container: no pod IP`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.action
			r := HookHTTPGet(context.Background(), &a, tc.podIP, hookPod, container)
			if r.Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", r.Message, tc.message)
			}
			if (r.Err != nil) != (tc.message != "") {
				t.Errorf("err %v with message %q", r.Err, tc.message)
			}
			if r.Code != tc.code {
				t.Errorf("code %d, want %d", r.Code, tc.code)
			}
			if r.FallbackEvent != "" {
				t.Errorf("unexpected fallback %q", r.FallbackEvent)
			}
		})
	}
	_ = srv
}

func TestHookHTTPGetHeaders(t *testing.T) {
	var mu sync.Mutex
	var ua, ae []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ua, ae = r.Header.Values("User-Agent"), r.Header.Values("Accept-Encoding")
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	r := HookHTTPGet(context.Background(), &corev1.HTTPGetAction{Port: intstr.FromInt(port)}, "127.0.0.1", hookPod, &corev1.Container{Name: "app"})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The lifecycle client is a default transport: it asks for gzip, unlike the prober.
	if fmt.Sprint(ua) != "[kube-lifecycle/1.33]" || fmt.Sprint(ae) != "[gzip]" {
		t.Errorf("User-Agent %q Accept-Encoding %q", ua, ae)
	}
}

func TestHookHTTPGetFallback(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	a := &corev1.HTTPGetAction{Scheme: corev1.URISchemeHTTPS, Path: "/start", Port: intstr.FromInt(port),
		HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer t"}}}
	r := HookHTTPGet(context.Background(), a, "127.0.0.1", hookPod, &corev1.Container{Name: "app"})
	if r.Err != nil || r.Message != "" {
		t.Fatalf("err %v message %q", r.Err, r.Message)
	}
	want := fmt.Sprintf("request to HTTPS lifecycle hook 127.0.0.1:%d got HTTP response, retry with HTTP succeeded", port)
	if r.FallbackEvent != want {
		t.Errorf("fallback event %q, want %q", r.FallbackEvent, want)
	}
	if r.Code != 200 {
		t.Errorf("code %d", r.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	// The https attempt never reached the handler; the http retry dropped Authorization.
	if fmt.Sprintf("%q", auth) != `[""]` {
		t.Errorf("Authorization seen by the server: %q", auth)
	}
}

func TestHookExec(t *testing.T) {
	cmd := []string{"sh", "-c", "touch /ready"}
	tests := []struct {
		name    string
		run     ExecFunc
		message string
		output  string
	}{
		{name: "exit 0", run: fakeExec("done", "", 0, nil, nil), output: "done"},
		{name: "exit 1", run: fakeExec("out", "oops", 1, nil, nil), output: "outoops",
			message: `Exec lifecycle hook ([sh -c touch /ready]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c touch /ready' exited with 1: oops, message: "outoops"`},
		{name: "runtime error", run: fakeExec("", "", 0, errors.New("rpc error: code = NotFound desc = no container"), nil),
			message: `Exec lifecycle hook ([sh -c touch /ready]) for Container "app" in Pod "web_default(uid-1)" failed - error: rpc error: code = NotFound desc = no container, message: ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := HookExec(context.Background(), tc.run, &corev1.ExecAction{Command: cmd}, hookPod, &corev1.Container{Name: "app"})
			if r.Message != tc.message || r.Output != tc.output || (r.Err != nil) != (tc.message != "") {
				t.Errorf("got message %q output %q err %v\nwant message %q output %q", r.Message, r.Output, r.Err, tc.message, tc.output)
			}
		})
	}
	var got = time.Duration(-1)
	HookExec(context.Background(), fakeExec("", "", 0, nil, &got), &corev1.ExecAction{Command: cmd}, hookPod, nil)
	if got != 0 {
		t.Errorf("hook ExecSync timeout %v, want 0 (none)", got)
	}
	var exitErr *ExitError
	r := HookExec(context.Background(), fakeExec("", "e", 3, nil, nil), &corev1.ExecAction{Command: cmd}, nil, nil)
	if !errors.As(r.Err, &exitErr) || exitErr.Code != 3 {
		t.Errorf("err %v is not an ExitError with code 3", r.Err)
	}
	if want := `Exec lifecycle hook ([sh -c touch /ready]) for Container "" in Pod "<nil>" failed - error: command 'sh -c touch /ready' exited with 3: e, message: "e"`; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
}

func TestHookSleep(t *testing.T) {
	start := time.Now()
	r := HookSleep(context.Background(), &corev1.SleepAction{Seconds: 0}, hookPod, &corev1.Container{Name: "app"})
	if r.Err != nil || time.Since(start) > time.Second {
		t.Errorf("sleep 0: err %v after %v", r.Err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = HookSleep(ctx, &corev1.SleepAction{Seconds: 5}, hookPod, &corev1.Container{Name: "app"})
	want := `Sleep lifecycle hook (5) for Container "app" in Pod "web_default(uid-1)" failed - error: container terminated before sleep hook finished`
	if r.Err == nil || r.Message != want {
		t.Errorf("cancelled sleep: err %v message %q, want %q", r.Err, r.Message, want)
	}
	if r.Target != "sleep 5s" {
		t.Errorf("target %q", r.Target)
	}
}
