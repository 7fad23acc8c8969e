package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event messages around lifecycle hooks in the kubelet 1.33
// (pkg/kubelet/kuberuntime/kuberuntime_container.go); their reasons are
// reason.FailedPostStartHook and reason.FailedPreStopHook, and a failed
// postStart is reason.ErrPostStartHook, the container's Waiting reason, with
// HookResult.Message as its message (ReasonCache, pkg/kubelet/kubelet_pods.go).
// The handler's failure message is deliberately not put in the events, "so
// that secrets won't leak".
const (
	// MessagePostStartHookFailed is the whole message of the
	// FailedPostStartHook event; the kubelet then kills the container (kill
	// message FailedPostStartHook) and the start fails.
	MessagePostStartHookFailed = "PostStartHook failed"
	// MessagePreStopHookFailed is the whole message of the FailedPreStopHook event.
	MessagePreStopHookFailed = "PreStopHook failed"
)

// HookResult is what one lifecycle handler run produced.
type HookResult struct {
	// Err is nil when the hook succeeded.
	Err error
	// Message is the text the kubelet's handler runner returns with a
	// failure (handlers.go Run), "" on success.
	Message string
	// Target is what ran, for display: the URL, the command, or "sleep Ns".
	Target string
	// Code is the HTTP status of the response that settled the hook, 0 when
	// none arrived. A hook does not look at it (see HookHTTPGet).
	Code int
	// Output is an exec hook's stdout followed by stderr.
	Output string
	// FallbackEvent is the message of the LifecycleHTTPFallback event, ""
	// when there was no https→http fallback.
	FallbackEvent string
}

// podDesc is the kubelet's format.Pod (pkg/kubelet/util/format/pod.go):
// "<name>_<namespace>(<uid>)", "<nil>" for no pod.
func podDesc(pod *corev1.Pod) string {
	if pod == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// containerName is container.Name, "" for none.
func containerName(c *corev1.Container) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// hookClient is configured as the kubelet's
// insecureContainerLifecycleHTTPClient (pkg/kubelet/kubelet.go): a plain
// transport with TLS verification off (so keep-alives and gzip
// Accept-Encoding on, no HTTP/2 attempt, no proxy since Proxy is nil), no
// timeout, and the same redirect rule as probes.
func hookClient() (*http.Client, *http.Transport) {
	t := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // as the kubelet
	return &http.Client{Transport: t, CheckRedirect: sameHostRedirects}, t
}

// discardBody drains and closes a hook response as the kubelet's
// discardHTTPRespBody does: the body is read (at most MaxBodyLength bytes)
// only when its declared length is at most MaxBodyLength.
func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.ContentLength <= MaxBodyLength {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBodyLength))
	}
}

// isHTTPResponseToHTTPS is the kubelet's isHTTPResponseError: a *url.Error
// whose cause says "server gave HTTP response to HTTPS client".
func isHTTPResponseToHTTPS(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Err == nil {
		return false
	}
	return strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

// HookHTTPGet runs a postStart/preStop httpGet handler as the kubelet 1.33
// does (runHTTPHandler in pkg/kubelet/lifecycle/handlers.go):
//
//   - the request is built by NewRequest with LifecycleUserAgent (the
//     kubelet calls NewRequestForHTTPGetAction with "lifecycle"); podIP is
//     the pod's first IP as the runtime reports it, used when action.Host is
//     empty (with neither, the kubelet fails with "failed to find networking
//     container: <pod status>"; here the status part is not reproduced);
//   - it is sent with the lifecycle client (hookClient): no timeout of its
//     own, ctx bounds it;
//   - the status code is not checked: any response, 404 or 500 included,
//     is a success; only a request that gets no response fails;
//   - an https request answered in plain HTTP is retried once over http
//     without the Authorization header; if that retry gets a response the
//     hook succeeds and FallbackEvent is set to "request to HTTPS lifecycle
//     hook <host:port> got HTTP response, retry with HTTP succeeded";
//   - on failure Message is "HTTP lifecycle hook (<path>) for Container
//     "<name>" in Pod "<name>_<ns>(<uid>)" failed - error: <err>" (no
//     ", message:" part in 1.33).
func HookHTTPGet(ctx context.Context, action *corev1.HTTPGetAction, podIP string, pod *corev1.Pod, container *corev1.Container) HookResult {
	var res HookResult
	fail := func(err error) HookResult {
		res.Err = err
		path := ""
		if action != nil {
			path = action.Path
		}
		res.Message = fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
			path, containerName(container), podDesc(pod), err)
		return res
	}
	if action == nil {
		return fail(errors.New("no httpGet action"))
	}
	res.Target = httpTarget(action, podIP, container)
	if action.Host == "" && podIP == "" {
		return fail(errors.New("failed to find networking container: no pod IP"))
	}
	req, err := NewRequest(ctx, action, podIP, container, LifecycleUserAgent)
	if err != nil {
		return fail(err)
	}
	res.Target = req.URL.String()

	client, t := hookClient()
	defer t.CloseIdleConnections()
	resp, err := client.Do(req)
	if resp != nil {
		res.Code = resp.StatusCode
	}
	discardBody(resp)

	if isHTTPResponseToHTTPS(err) {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, httpErr := client.Do(retry)
		if httpErr == nil {
			res.Code = resp.StatusCode
			res.FallbackEvent = fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host)
			err = nil
		}
		discardBody(resp)
	}
	if err != nil {
		return fail(err)
	}
	return res
}

// HookExec runs a postStart/preStop exec handler as the kubelet 1.33 does
// (Run in pkg/kubelet/lifecycle/handlers.go): the command runs as written
// (no $(VAR) expansion) through ExecSync with no timeout (the kubelet passes
// 0). A non-zero exit code is a failure whose error is an *ExitError. On
// failure Message is "Exec lifecycle hook ([<cmd>]) for Container "<name>"
// in Pod "<name>_<ns>(<uid>)" failed - error: <err>, message: "<output>""
// (the command printed with %v, the output quoted with %q).
func HookExec(ctx context.Context, run ExecFunc, action *corev1.ExecAction, pod *corev1.Pod, container *corev1.Container) HookResult {
	var res HookResult
	var cmd []string
	if action != nil {
		cmd = action.Command
	}
	res.Target = strings.Join(cmd, " ")
	var out []byte
	var err error
	switch {
	case action == nil:
		err = errors.New("no exec action")
	case run == nil:
		err = errors.New("no exec runner")
	default:
		var stdout, stderr []byte
		var code int32
		stdout, stderr, code, err = run(ctx, cmd, 0)
		if err == nil && code != 0 {
			err = &ExitError{Cmd: cmd, Code: code, Stderr: stderr}
		}
		out = combinedOutput(stdout, stderr)
	}
	res.Output = string(out)
	if err != nil {
		res.Err = err
		res.Message = fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
			cmd, containerName(container), podDesc(pod), err, string(out))
	}
	return res
}

// HookSleep runs a postStart/preStop sleep handler as the kubelet 1.33 does
// (runSleepHandler in pkg/kubelet/lifecycle/handlers.go, PodLifecycleSleepAction
// on by default): it waits action.Seconds (0 is allowed,
// PodLifecycleSleepActionAllowZero is on by default in 1.33) unless ctx ends
// first, which fails with "container terminated before sleep hook
// finished"; Message is then "Sleep lifecycle hook (<seconds>) for Container
// "<name>" in Pod "<name>_<ns>(<uid>)" failed - error: <err>".
func HookSleep(ctx context.Context, action *corev1.SleepAction, pod *corev1.Pod, container *corev1.Container) HookResult {
	var seconds int64
	if action != nil {
		seconds = action.Seconds
	}
	res := HookResult{Target: fmt.Sprintf("sleep %ds", seconds)}
	timer := time.NewTimer(time.Duration(seconds) * time.Second)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		res.Err = errors.New("container terminated before sleep hook finished")
		res.Message = fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
			seconds, containerName(container), podDesc(pod), res.Err)
	case <-timer.C:
	}
	return res
}
