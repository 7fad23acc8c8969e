package steps

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// postStartStep mirrors startContainer step 4: the postStart hook runs right
// after StartContainer and before the next container is started
// (handlerRunner.Run in pkg/kubelet/lifecycle/handlers.go).
type postStartStep struct{ name string }

func (postStartStep) mirrors() string {
	return "kubeGenericRuntimeManager.startContainer step 4 → runner.Run (pkg/kubelet/lifecycle/handlers.go)"
}

func (postStartStep) explain() string {
	return "Right after starting a container with a postStart hook, the kubelet runs the hook and waits for it before starting the next container: exec runs the command in the container (ExecSync), httpGet calls the pod IP from the node, sleep waits. If the hook fails, the kubelet records FailedPostStartHook and kills the container; the hook's output appears only in that event's message."
}

func (s postStartStep) requests(e *Engine) []Request {
	c := e.rt.containers[s.name]
	h := c.spec.Lifecycle.PostStart
	if h.Exec == nil {
		return nil
	}
	id := c.id
	if id == "" {
		id = "<container id from CreateContainer>"
	}
	return []Request{{Method: "ExecSync", Message: &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: h.Exec.Command}}}
}

func (s postStartStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	h := c.spec.Lifecycle.PostStart
	var (
		details []Detail
		herr    error
	)
	switch {
	case h.Exec != nil:
		resp, err := e.client.ExecSync(ctx, c.id, h.Exec.Command, 0)
		if err != nil {
			herr = fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %s", h.Exec.Command, s.name, podRef(e), unwrapCRIMessage(err))
			break
		}
		details = append(details, kv("exit code", fmt.Sprint(resp.ExitCode)),
			kv("stdout", quoteOut(resp.Stdout)), kv("stderr", quoteOut(resp.Stderr)))
		if resp.ExitCode != 0 {
			herr = fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: command '%s' exited with %d: %s, message: %q",
				h.Exec.Command, s.name, podRef(e), strings.Join(h.Exec.Command, " "), resp.ExitCode, resp.Stderr, string(resp.Stdout))
		}
	case h.HTTPGet != nil:
		code, body, err := httpGet(ctx, h.HTTPGet, first(e.rt.podIPs), c.spec)
		details = append(details, kv("status", fmt.Sprint(code)), kv("body", quoteOut(body)))
		if err != nil {
			herr = fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, s.name, podRef(e), err)
		}
	case h.Sleep != nil:
		d := time.Duration(h.Sleep.Seconds) * time.Second
		select {
		case <-time.After(d):
			details = append(details, kv("slept", d.String()))
		case <-ctx.Done():
			herr = ctx.Err()
		}
	default:
		herr = fmt.Errorf("invalid handler: no exec, httpGet or sleep")
	}
	if herr == nil {
		return ok("postStart hook succeeded", details...)
	}
	obj := containerObject(c)
	e.tracker.Record("Warning", "FailedPostStartHook", obj, herr.Error())
	// The kubelet kills the container whose hook failed.
	e.tracker.Record("Normal", "Killing", obj, "FailedPostStartHook")
	grace := e.gracePeriod()
	var x *exit
	if _, err := e.client.StopContainer(ctx, c.id, grace); err == nil {
		if st, err := e.client.ContainerStatus(ctx, c.id); err == nil && st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			ex := e.containerExited(c, st.GetStatus())
			x = &ex
		}
	}
	summary := "postStart hook failed; container killed"
	if x == nil || x.restart {
		// A container the next sync restarts is reported Waiting with the
		// start error (the kubelet's reasonCache); one that stays dead keeps
		// its Terminated state.
		e.tracker.HookFailed(s.name, herr.Error())
	}
	if x != nil {
		details = append(details, kv("killed", fmt.Sprintf("exit code %d (%s)", x.code, x.reason)), kv("next", e.restartReason(c, x.code)))
		if x.restart {
			// The next sync starts the killed container again, per restartPolicy.
			e.scheduleRestart(s.name)
			summary += "; the kubelet restarts it"
		}
	}
	r := fail("PostStartHookError", herr, summary)
	r.Details = details
	return r
}

func podRef(e *Engine) string {
	return fmt.Sprintf("%s_%s(%s)", e.pod.Name, e.pod.Namespace, e.pod.UID)
}

func quoteOut(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return "(empty)"
	}
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// httpGet performs an httpGet handler from the node, as the kubelet's
// handler runner does: to the pod IP unless host is set.
func httpGet(ctx context.Context, h *corev1.HTTPGetAction, podIP string, c *corev1.Container) (int, []byte, error) {
	host := h.Host
	if host == "" {
		host = podIP
	}
	port := h.Port.IntValue()
	if port == 0 && h.Port.StrVal != "" {
		for _, p := range c.Ports {
			if p.Name == h.Port.StrVal {
				port = int(p.ContainerPort)
			}
		}
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + h.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	for _, hdr := range h.HTTPHeaders {
		req.Header.Add(hdr.Name, hdr.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return resp.StatusCode, body, fmt.Errorf("HTTP %d from %s", resp.StatusCode, url)
	}
	return resp.StatusCode, body, nil
}
