package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/probe"
	"github.com/podstep/podstep/internal/reason"
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
	var hr probe.HookResult
	switch {
	case h.Exec != nil:
		hr = probe.HookExec(ctx, e.execFunc(c.id), h.Exec, e.pod, c.spec)
	case h.HTTPGet != nil:
		hr = probe.HookHTTPGet(ctx, h.HTTPGet, e.probeHost(), e.pod, c.spec)
	case h.Sleep != nil:
		hr = probe.HookSleep(ctx, h.Sleep, e.pod, c.spec)
	default:
		hr = probe.HookResult{Err: fmt.Errorf("invalid handler: no exec, httpGet or sleep")}
		hr.Message = hr.Err.Error()
	}
	details := []Detail{kv("handler", hr.Target)}
	if hr.Code != 0 {
		// The kubelet does not look at the status code: any answer succeeds.
		details = append(details, kv("status", fmt.Sprint(hr.Code)))
	}
	if h.Exec != nil {
		details = append(details, kv("output", quoteOut([]byte(hr.Output))))
	}
	if hr.FallbackEvent != "" {
		e.tracker.Record(corev1.EventTypeWarning, reason.LifecycleHTTPFallback, "", hr.FallbackEvent)
	}
	restsOn := ""
	switch {
	case h.Exec != nil:
		// What the simulator reads of the hook's command (the kubelet's
		// hook runner sends no timeout: RunInContainer(..., 0)).
		restsOn = e.execRestsOn(c, "postStart", h.Exec.Command, 0)
	case h.HTTPGet != nil:
		restsOn = e.handlerRestsOn(c, "postStart", corev1.ProbeHandler{HTTPGet: h.HTTPGet})
	}
	if hr.Err == nil {
		r := ok("postStart hook succeeded", details...)
		if restsOn != "" {
			r.RestsOn = []string{restsOn}
		}
		return r
	}
	herr := fmt.Errorf("%s", hr.Message)
	obj := containerObject(c)
	// The event does not carry the hook's message (it could hold secrets);
	// the message is the container's waiting message instead.
	e.tracker.Record(corev1.EventTypeWarning, reason.FailedPostStartHook, obj, probe.MessagePostStartHookFailed)
	// The kubelet kills the container whose hook failed.
	var x *exit
	if ex, killed := e.killContainer(ctx, c, reason.FailedPostStartHook); killed {
		x = &ex
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
	r := fail(reason.ErrPostStartHook, herr, summary)
	r.Details = details
	if restsOn != "" {
		r.RestsOn = []string{restsOn}
	}
	// A crash loop of failing hooks is explained by the hook.
	r.Explanation = e.explain(s.name, r, nil)
	c.exitExplained = r.Explanation
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

// execFunc runs commands in container id through the recording CRI client
// (ExecSync), for exec hooks and probes. It returns the runtime's own
// gRPC error, as the kubelet's prober sees it.
func (e *Engine) execFunc(id string) probe.ExecFunc {
	return func(ctx context.Context, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		resp, err := e.client.ExecSync(ctx, id, cmd, int64(timeout/time.Second))
		if err != nil {
			return nil, nil, 0, unwrapCRI(err)
		}
		return resp.Stdout, resp.Stderr, resp.ExitCode, nil
	}
}
