package watch

import (
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/steps"
)

// result says what a finished step's calls did, with the kubelet's reason
// when a call that makes something failed (w.mu held).
func (p *Pod) result(s *steps.Step) steps.Result {
	var r steps.Result
	fail := func(why string, c cri.Call) {
		r.Reason, r.Message, r.Err = why, c.ErrorMessage(), c.Err
	}
	var failed *cri.Call
	for i := range s.Calls {
		if s.Calls[i].Err != nil && failed == nil {
			failed = &s.Calls[i]
		}
	}
	if s.Kind == steps.KindVolumes || s.Kind == steps.KindRemoveDirs {
		return csiResult(s, failed)
	}
	det := func(k, v string) { r.Details = append(r.Details, steps.Detail{Key: k, Value: v}) }
	switch s.Kind {
	case steps.KindRunSandbox:
		if failed != nil {
			r.Summary = "RunPodSandbox failed"
			fail(reason.FailedCreatePodSandBox, *failed)
			break
		}
		r.Summary = "sandbox " + short(p.sandboxID) + " created"
		det("sandbox", p.sandboxID)
	case steps.KindSandboxStatus:
		r.Summary = "sandbox " + strings.ToLower(sandboxWord(p.sandboxReady))
		if len(p.ips) > 0 {
			r.Summary += ", IP " + strings.Join(p.ips, ", ")
			det("pod IP", strings.Join(p.ips, ", "))
		}
	case steps.KindPull:
		var image string
		pulled := false
		for _, c := range s.Calls {
			switch q := c.Request.(type) {
			case *runtimeapi.ImageStatusRequest:
				image = q.GetImage().GetImage()
			case *runtimeapi.PullImageRequest:
				image, pulled = q.GetImage().GetImage(), true
			}
		}
		switch {
		case failed != nil:
			r.Summary = "image " + image + " could not be pulled"
			fail(reason.ErrImagePull, *failed)
		case pulled:
			r.Summary = "pulled image " + image
		default:
			r.Summary = "image " + image + " present"
		}
		if image != "" {
			det("image", image)
		}
	case steps.KindCreate:
		k := p.containers[s.Container]
		if failed != nil || k == nil {
			r.Summary = "CreateContainer " + s.Container + " failed"
			if failed != nil {
				fail(reason.ErrCreateContainer, *failed)
			}
			p.specDetails(s.Container, det)
			break
		}
		r.Summary = fmt.Sprintf("created container %s (%s, attempt %d)", s.Container, short(k.id), k.attempt)
		det("container", k.id)
		det("image", k.image)
		if k.init && p.specPod() == nil {
			det("init", "inferred: it exited 0 before the next container was created")
		}
		p.specDetails(s.Container, det)
	case steps.KindStart:
		if failed != nil {
			r.Summary = "StartContainer " + s.Container + " failed"
			fail(reason.ErrRunContainer, *failed)
			break
		}
		r.Summary = "started container " + s.Container
	case steps.KindPostStart, steps.KindReady:
		what := "postStart hook"
		if s.Kind == steps.KindReady {
			what = "exec probe"
		}
		for _, c := range s.Calls {
			q, _ := c.Request.(*runtimeapi.ExecSyncRequest)
			a, _ := c.Response.(*runtimeapi.ExecSyncResponse)
			det("command", strings.Join(q.GetCmd(), " "))
			if c.Err != nil {
				r.Summary = what + " failed: " + c.ErrorMessage()
				if s.Kind == steps.KindPostStart {
					fail(reason.ErrPostStartHook, c)
				}
				continue
			}
			det("exit code", fmt.Sprint(a.GetExitCode()))
			if out := strings.TrimSpace(string(a.GetStdout())); out != "" {
				det("stdout", p.w.red.Text(out))
			}
			if out := strings.TrimSpace(string(a.GetStderr())); out != "" {
				det("stderr", p.w.red.Text(out))
			}
			r.Summary = fmt.Sprintf("%s of %s exited %d", what, s.Container, a.GetExitCode())
			if a.GetExitCode() != 0 && s.Kind == steps.KindPostStart {
				r.Reason, r.Message = reason.ErrPostStartHook, p.w.red.Text(hookMessage(q, a, nil, s.Container, p.podRef()))
				r.Err = fmt.Errorf("%s", r.Message)
			}
		}
	case steps.KindRelist:
		r.Summary = "relist: " + p.containerStates()
	case steps.KindStopContainers, steps.KindRemoveContainers:
		verb := "stopped"
		if s.Kind == steps.KindRemoveContainers {
			verb = "removed"
		}
		var names []string
		for _, c := range s.Calls {
			id := ""
			switch q := c.Request.(type) {
			case *runtimeapi.StopContainerRequest:
				id = q.GetContainerId()
			case *runtimeapi.RemoveContainerRequest:
				id = q.GetContainerId()
			case *runtimeapi.ContainerStatusRequest:
				continue
			default:
				continue
			}
			names = append(names, p.nameOf(id))
		}
		r.Summary = verb + " " + strings.Join(names, ", ")
		if failed != nil {
			r.Warnings = append(r.Warnings, failed.Method+": "+failed.ErrorMessage())
		}
	case steps.KindStopSandbox:
		r.Summary = "sandbox stopped"
		if failed != nil {
			r.Summary = "StopPodSandbox failed"
			r.Warnings = append(r.Warnings, failed.ErrorMessage())
		}
	case steps.KindRemoveSandbox:
		r.Summary = "sandbox removed"
		if failed != nil {
			r.Summary = "RemovePodSandbox failed"
			r.Warnings = append(r.Warnings, failed.ErrorMessage())
		}
	}
	r.Warnings = append(s.Result.Warnings, r.Warnings...)
	if s.Title == "podstep joined late" {
		r.Summary = "joined late: " + p.containerStates()
	}
	return r
}

// nameOf names a container ID of the pod (its short ID if unknown).
func (p *Pod) nameOf(id string) string {
	for _, n := range p.order {
		if p.containers[n].id == id {
			return n
		}
	}
	if k := p.w.byContainer[id]; k != nil {
		return k.name
	}
	return short(id)
}

// containerStates is "sandbox ready; setup exited 0, main running".
func (p *Pod) containerStates() string {
	parts := []string{}
	for _, n := range p.order {
		k := p.containers[n]
		s := n + " " + stateWord(k.state)
		if k.state == runtimeapi.ContainerState_CONTAINER_EXITED {
			s += fmt.Sprintf(" %d", k.exitCode)
		}
		if k.attempt > 0 {
			s += fmt.Sprintf(" (attempt %d)", k.attempt)
		}
		parts = append(parts, s)
	}
	out := "sandbox " + strings.ToLower(sandboxWord(p.sandboxReady))
	if len(parts) > 0 {
		out += "; " + strings.Join(parts, ", ")
	}
	return out
}

func sandboxWord(ready bool) string {
	if ready {
		return "ready"
	}
	return "not ready"
}

// stateWord is a container state in one word.
func stateWord(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	}
	return "unknown"
}

// hookMessage is the message of a failed exec hook, worded as the
// kubelet's handlerRunner.Run (pkg/kubelet/lifecycle/handlers.go) words it.
func hookMessage(q *runtimeapi.ExecSyncRequest, a *runtimeapi.ExecSyncResponse, err error, container, pod string) string {
	if err == nil {
		err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(q.GetCmd(), " "), a.GetExitCode(), a.GetStderr())
	}
	return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
		q.GetCmd(), container, pod, err, string(a.GetStdout())+string(a.GetStderr()))
}
