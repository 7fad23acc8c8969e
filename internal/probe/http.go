package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KubeletVersion is the major.minor of the kubelet podstep replays; it ends
// the User-Agent the kubelet sends ("kube-<purpose>/<major>.<minor>",
// userAgent in pkg/probe/http/request.go, from component-base's version).
const KubeletVersion = "1.33"

// User agents the kubelet sends when httpHeaders do not set User-Agent.
const (
	// ProbeUserAgent is sent by HTTP probes (purpose "probe").
	ProbeUserAgent = "kube-probe/" + KubeletVersion
	// LifecycleUserAgent is sent by HTTP lifecycle hooks (purpose
	// "lifecycle", pkg/kubelet/lifecycle/handlers.go).
	LifecycleUserAgent = "kube-lifecycle/" + KubeletVersion
)

// MaxBodyLength is how much of a response body the kubelet reads: 10 KiB
// (maxRespBodyLength in pkg/probe/http/http.go and in
// pkg/kubelet/lifecycle/handlers.go). The exec probe keeps as much of the
// command's output (maxReadLength in pkg/probe/exec/exec.go).
const MaxBodyLength = 10 * 1 << 10

// maxRedirects is the net/http default the kubelet's redirect checker keeps.
const maxRedirects = 10

// NewRequest builds the GET request for an httpGet probe or hook as the
// kubelet's NewRequestForHTTPGetAction (pkg/probe/http/request.go) does:
//
//   - scheme: action.Scheme lower-cased, "http" when empty;
//   - host: action.Host, or podIP when empty;
//   - port: ResolvePort (an int, or a named container port);
//   - URL: action.Path parsed as a URL (kept as a bare path when it does not
//     parse) with scheme and host:port set, so a "?query" in the path stays;
//   - headers: action.HTTPHeaders added in order (names canonicalised);
//     User-Agent set to userAgent when no User-Agent header is given
//     (ProbeUserAgent when userAgent is ""); "Accept: */*" when no Accept
//     header is given, and an Accept header whose first value is empty is
//     removed; the Host header, if any, becomes req.Host.
func NewRequest(ctx context.Context, action *corev1.HTTPGetAction, podIP string, container *corev1.Container, userAgent string) (*http.Request, error) {
	if action == nil {
		return nil, errors.New("no httpGet action")
	}
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	h := make(http.Header)
	for _, hd := range action.HTTPHeaders {
		h.Add(hd.Name, hd.Value)
	}
	if userAgent == "" {
		userAgent = ProbeUserAgent
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	req.Header = h
	req.Host = h.Get("Host")
	return req, nil
}

// httpTarget is the URL an httpGet action aims at, for display even when the
// port does not resolve (then the port reference is shown as written).
func httpTarget(action *corev1.HTTPGetAction, podIP string, container *corev1.Container) string {
	if action == nil {
		return ""
	}
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port := action.Port.String()
	if n, err := ResolvePort(action.Port, container); err == nil {
		port = strconv.Itoa(n)
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, port)
	return u.String()
}

// sameHostRedirects is the kubelet's redirect rule (RedirectChecker(false)
// in pkg/probe/http/http.go, used by probes and, through kubelet.go's
// insecureContainerLifecycleHTTPClient, by HTTP hooks): a redirect whose
// hostname (port ignored) differs from the first request's is not followed,
// the 3xx response is returned as is; same-host redirects are followed up to
// 10 times, then the request fails with "stopped after 10 redirects".
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// probeTransport is a transport configured as the kubelet's HTTP prober's
// (httpprobe.New(false) → NewWithTLSConfig, pkg/probe/http/http.go): TLS
// without certificate verification and without a client certificate, no
// proxy, no keep-alives, no compression (so no Accept-Encoding header), the
// lingering probe dialer, and utilnet.SetTransportDefaults' 10 s TLS
// handshake timeout, 90 s idle timeout and HTTP/2 when TLS negotiates it.
func probeTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         probeDialer().DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe targets
		DisableKeepAlives:   true,
		DisableCompression:  true,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
}

// HTTPGet runs one httpGet probe attempt as the kubelet does
// (pkg/kubelet/prober/prober.go runProbe → pkg/probe/http/request.go and
// DoHTTPProbe in pkg/probe/http/http.go). userAgent is the User-Agent to
// send when httpHeaders set none ("" means ProbeUserAgent). timeout is the
// whole exchange's limit (the probe's timeoutSeconds; 0 means none); ctx can
// cancel it earlier.
//
//   - The request cannot be built (port unresolvable, bad URL): Unknown with
//     Err set, no Output; the kubelet retries it and records "errored".
//   - The exchange fails (refused, timeout, TLS, too many redirects):
//     Failure, Output is the Go error text, e.g. `Get
//     "http://10.1.2.3:8080/healthz": dial tcp 10.1.2.3:8080: connect:
//     connection refused` or `Get "…": context deadline exceeded
//     (Client.Timeout exceeded while awaiting headers)`.
//   - Reading the body fails: Failure with Err set and no Output. At most
//     MaxBodyLength bytes are read; a longer body is truncated, not an error.
//   - 200 <= code < 300: Success, Output is the body.
//   - 300 <= code < 400 (a redirect to another host is not followed, see
//     sameHostRedirects): Warning, Output "Probe terminated redirects,
//     Response body: <body>".
//   - Any other code: Failure, Output "HTTP probe failed with statuscode:
//     <code>" (the body is never part of the message).
func HTTPGet(ctx context.Context, action *corev1.HTTPGetAction, podIP string, container *corev1.Container, timeout time.Duration, userAgent string) Result {
	res := Result{Target: httpTarget(action, podIP, container)}
	req, err := NewRequest(ctx, action, podIP, container, userAgent)
	if err != nil {
		res.Outcome, res.Err = Unknown, err
		return res
	}
	res.Target = req.URL.String()

	t := probeTransport()
	defer t.CloseIdleConnections()
	client := &http.Client{Timeout: timeout, Transport: t, CheckRedirect: sameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		res.Outcome, res.Output = Failure, err.Error()
		return res
	}
	defer func() { _ = resp.Body.Close() }()
	res.Code = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyLength))
	if err != nil {
		res.Outcome, res.Err = Failure, err
		return res
	}
	switch {
	case resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusMultipleChoices:
		res.Outcome, res.Output = Success, string(body)
	case resp.StatusCode >= http.StatusMultipleChoices && resp.StatusCode < http.StatusBadRequest:
		res.Outcome, res.Output = Warning, fmt.Sprintf("Probe terminated redirects, Response body: %v", string(body))
	default:
		res.Outcome, res.Output = Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return res
}
