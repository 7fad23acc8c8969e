package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testMux serves the probe targets the tests use. otherHost is where
// /redirect-other points (same server, other hostname).
func testMux(otherHost *string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/404", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("not here"))
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("secret stack trace"))
	})
	mux.HandleFunc("/redirect-same", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "/ok")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/redirect-other", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "http://"+*otherHost+"/ok")
		w.WriteHeader(http.StatusFound)
		_, _ = w.Write([]byte("moved"))
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "/loop")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "ua=%q accept=%q ae=%q host=%q custom=%q auth=%q query=%q",
			r.Header.Values("User-Agent"), r.Header.Values("Accept"), r.Header.Values("Accept-Encoding"),
			r.Host, r.Header.Values("X-Custom"), r.Header.Values("Authorization"), r.URL.RawQuery)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("late"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 20*1024)))
	})
	mux.HandleFunc("/short-body", func(w http.ResponseWriter, _ *http.Request) {
		// Promise 100 bytes, send 5, hang up: the body read fails.
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("no hijacker")
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello")
		_ = buf.Flush()
		_ = conn.Close()
	})
	return mux
}

// newServer starts an HTTP server on 127.0.0.1 whose /redirect-other points
// to localhost on the same port.
func newServer(t *testing.T) (srv *httptest.Server, host string, port int) {
	t.Helper()
	var other string
	srv = httptest.NewServer(testMux(&other))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	host = u.Hostname()
	port, _ = strconv.Atoi(u.Port())
	other = net.JoinHostPort("localhost", u.Port())
	return srv, host, port
}

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

func TestHTTPGet(t *testing.T) {
	srv, host, port := newServer(t)
	dead := closedPort(t)
	container := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}

	tests := []struct {
		name      string
		action    corev1.HTTPGetAction
		podIP     string
		timeout   time.Duration
		ua        string
		outcome   Outcome
		output    string
		outPrefix string
		outLen    int
		code      int
		target    string
		err       string
	}{
		{name: "200", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, output: "ok", code: 200, target: srv.URL + "/ok"},
		{name: "302 same host is followed", action: corev1.HTTPGetAction{Path: "/redirect-same", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, output: "ok", code: 200},
		{name: "302 other host is a warning", action: corev1.HTTPGetAction{Path: "/redirect-other", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Warning, output: "Probe terminated redirects, Response body: moved", code: 302},
		{name: "redirect loop", action: corev1.HTTPGetAction{Path: "/loop", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Failure, output: `Get "/loop": stopped after 10 redirects`}, // net/http names the Location as sent
		{name: "404", action: corev1.HTTPGetAction{Path: "/404", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Failure, output: "HTTP probe failed with statuscode: 404", code: 404},
		{name: "500 hides the body", action: corev1.HTTPGetAction{Path: "/500", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Failure, output: "HTTP probe failed with statuscode: 500", code: 500},
		{name: "timeout", action: corev1.HTTPGetAction{Path: "/slow", Port: intstr.FromInt32(int32(port))}, podIP: host, timeout: 200 * time.Millisecond,
			outcome: Failure, output: fmt.Sprintf(`Get "%s/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, srv.URL)},
		{name: "body cut at 10 KiB", action: corev1.HTTPGetAction{Path: "/big", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, outLen: 10240, code: 200},
		{name: "body read error", action: corev1.HTTPGetAction{Path: "/short-body", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Failure, output: "", code: 200, err: "unexpected EOF"},
		{name: "connection refused", action: corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(dead)}, podIP: "127.0.0.1",
			outcome: Failure, output: fmt.Sprintf(`Get "http://127.0.0.1:%d/": dial tcp 127.0.0.1:%d: connect: connection refused`, dead, dead)},
		{name: "named port", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("web")}, podIP: host,
			outcome: Success, output: "ok", code: 200, target: srv.URL + "/ok"},
		{name: "unknown named port", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("metrics")}, podIP: host,
			outcome: Unknown, err: `strconv.Atoi: parsing "metrics": invalid syntax`, target: "http://" + host + ":metrics/ok"},
		{name: "port 0", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(0)}, podIP: host,
			outcome: Unknown, err: "invalid port number: 0"},
		{name: "host overrides pod IP", action: corev1.HTTPGetAction{Host: host, Path: "/ok", Port: intstr.FromInt32(int32(port))}, podIP: "192.0.2.1",
			outcome: Success, output: "ok", code: 200},
		{name: "path without slash", action: corev1.HTTPGetAction{Path: "ok", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, output: "ok", code: 200, target: srv.URL + "/ok"},
		{name: "upper-case scheme", action: corev1.HTTPGetAction{Scheme: "HTTP", Path: "/ok", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, output: "ok", code: 200},
		{name: "default headers", action: corev1.HTTPGetAction{Path: "/headers?x=1", Port: intstr.FromInt32(int32(port))}, podIP: host,
			outcome: Success, code: 200,
			output: fmt.Sprintf(`ua=["kube-probe/1.33"] accept=["*/*"] ae=[] host=%q custom=[] auth=[] query="x=1"`, net.JoinHostPort(host, strconv.Itoa(port)))},
		{name: "caller user agent", action: corev1.HTTPGetAction{Path: "/headers", Port: intstr.FromInt32(int32(port))}, podIP: host, ua: "kube-probe/9.9",
			outcome: Success, code: 200,
			output: fmt.Sprintf(`ua=["kube-probe/9.9"] accept=["*/*"] ae=[] host=%q custom=[] auth=[] query=""`, net.JoinHostPort(host, strconv.Itoa(port)))},
		{name: "httpHeaders override", podIP: host, action: corev1.HTTPGetAction{Path: "/headers", Port: intstr.FromInt32(int32(port)), HTTPHeaders: []corev1.HTTPHeader{
			{Name: "user-agent", Value: "mine/1"}, {Name: "Accept", Value: "application/json"}, {Name: "Host", Value: "example.test"},
			{Name: "x-custom", Value: "a"}, {Name: "X-Custom", Value: "b"},
		}}, outcome: Success, code: 200,
			output: `ua=["mine/1"] accept=["application/json"] ae=[] host="example.test" custom=["a" "b"] auth=[] query=""`},
		{name: "empty Accept removes it", podIP: host, action: corev1.HTTPGetAction{Path: "/headers", Port: intstr.FromInt32(int32(port)), HTTPHeaders: []corev1.HTTPHeader{
			{Name: "Accept", Value: ""},
		}}, outcome: Success, code: 200,
			output: fmt.Sprintf(`ua=["kube-probe/1.33"] accept=[] ae=[] host=%q custom=[] auth=[] query=""`, net.JoinHostPort(host, strconv.Itoa(port)))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			action := tc.action
			r := HTTPGet(context.Background(), &action, tc.podIP, container, timeout, tc.ua)
			if r.Outcome != tc.outcome {
				t.Errorf("outcome %q, want %q (output %q, err %v)", r.Outcome, tc.outcome, r.Output, r.Err)
			}
			switch {
			case tc.outLen != 0:
				if len(r.Output) != tc.outLen {
					t.Errorf("output length %d, want %d", len(r.Output), tc.outLen)
				}
			case r.Output != tc.output:
				t.Errorf("output\n got %q\nwant %q", r.Output, tc.output)
			}
			if r.Code != tc.code {
				t.Errorf("code %d, want %d", r.Code, tc.code)
			}
			if tc.target != "" && r.Target != tc.target {
				t.Errorf("target %q, want %q", r.Target, tc.target)
			}
			gotErr := ""
			if r.Err != nil {
				gotErr = r.Err.Error()
			}
			if gotErr != tc.err {
				t.Errorf("err %q, want %q", gotErr, tc.err)
			}
		})
	}
}

func TestHTTPGetTLS(t *testing.T) {
	var other string
	tlsSrv := httptest.NewTLSServer(testMux(&other))
	defer tlsSrv.Close()
	plain, _, plainPort := newServer(t)
	_ = plain
	u, _ := url.Parse(tlsSrv.URL)
	tlsPort, _ := strconv.Atoi(u.Port())

	tests := []struct {
		name    string
		port    int
		outcome Outcome
		output  string
	}{
		// The test server's certificate is self-signed: the kubelet does not verify.
		{name: "https without verification", port: tlsPort, outcome: Success, output: "ok"},
		{name: "https to a plain server", port: plainPort, outcome: Failure,
			output: fmt.Sprintf(`Get "https://127.0.0.1:%d/ok": http: server gave HTTP response to HTTPS client`, plainPort)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &corev1.HTTPGetAction{Scheme: corev1.URISchemeHTTPS, Path: "/ok", Port: intstr.FromInt(tc.port)}
			r := HTTPGet(context.Background(), a, "127.0.0.1", nil, 5*time.Second, "")
			if r.Outcome != tc.outcome || r.Output != tc.output {
				t.Errorf("got %q %q, want %q %q", r.Outcome, r.Output, tc.outcome, tc.output)
			}
			if want := fmt.Sprintf("https://127.0.0.1:%d/ok", tc.port); r.Target != want {
				t.Errorf("target %q, want %q", r.Target, want)
			}
		})
	}
}

func TestNewRequest(t *testing.T) {
	tests := []struct {
		name   string
		action corev1.HTTPGetAction
		url    string
		host   string
		header http.Header
	}{
		{name: "defaults", action: corev1.HTTPGetAction{Port: intstr.FromInt(80)},
			url: "http://10.0.0.7:80", header: http.Header{"User-Agent": {"kube-lifecycle/1.33"}, "Accept": {"*/*"}}},
		{name: "ipv6 pod", action: corev1.HTTPGetAction{Path: "/h", Port: intstr.FromInt(80), Scheme: "HTTPS"},
			url: "https://[fd00::7]:80/h", header: http.Header{"User-Agent": {"kube-lifecycle/1.33"}, "Accept": {"*/*"}}},
		{name: "host header", action: corev1.HTTPGetAction{Path: "/h", Port: intstr.FromInt(80), HTTPHeaders: []corev1.HTTPHeader{{Name: "host", Value: "svc.local"}}},
			url: "http://10.0.0.7:80/h", host: "svc.local",
			header: http.Header{"Host": {"svc.local"}, "User-Agent": {"kube-lifecycle/1.33"}, "Accept": {"*/*"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			podIP := "10.0.0.7"
			if strings.HasPrefix(tc.name, "ipv6") {
				podIP = "fd00::7"
			}
			a := tc.action
			req, err := NewRequest(context.Background(), &a, podIP, nil, LifecycleUserAgent)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.url || req.Host != tc.host || req.Method != http.MethodGet {
				t.Errorf("got %s %s host %q, want GET %s host %q", req.Method, req.URL, req.Host, tc.url, tc.host)
			}
			if fmt.Sprint(req.Header) != fmt.Sprint(tc.header) {
				t.Errorf("headers %v, want %v", req.Header, tc.header)
			}
		})
	}
}
