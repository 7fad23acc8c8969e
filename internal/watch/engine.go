package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// ErrRetry is Retry's answer: the kubelet retries on its own.
var ErrRetry = errors.New("podstep proxy cannot retry a real kubelet's call: the kubelet retries on its own")

// ErrNothingHeld is Next's answer when no call of the pod is held.
var ErrNothingHeld = errors.New("no call of this pod is held: the kubelet runs on its own (start podstep proxy with --hold)")

// Steps are the pod's steps so far, the open one running; with calls
// held, the held call's step is the one NextStep names.
func (p *Pod) Steps() []steps.Step {
	p.w.mu.Lock()
	out := make([]steps.Step, 0, len(p.steps)+len(p.open))
	for _, s := range p.steps {
		out = append(out, copyStep(s))
	}
	for _, o := range p.openSteps() {
		s := copyStep(o.step)
		s.ID = len(out) + 1
		p.showInFlight(o, &s)
		out = append(out, s)
	}
	out = p.showWaiting(out)
	p.w.mu.Unlock()
	if h := p.w.opts.Hold; h != nil {
		for _, x := range h.Held() {
			for i := range out {
				if x.Pod == p && out[i].Name == x.Step && out[i].State == steps.Running {
					// The held call is the request the step will send.
					out[i].Requests = append(out[i].Requests, steps.Request{Method: x.Call.Name(), Message: x.Request, Note: "held by podstep"})
					out[i].Title = fmt.Sprintf("%s: HELD, the kubelet gives up in %s, podstep lets it go in %s (n: let it go, c: continue)",
						x.Call.Name(), time.Until(x.Deadline).Round(time.Second), time.Until(x.ReleaseAt).Round(time.Second))
					break
				}
			}
		}
	}
	return out
}

// Changed signals when the pod has a new event or a held call changed
// (tui.Live): the TUI then re-reads it.
func (p *Pod) Changed() <-chan struct{} { return p.changed }

func (p *Pod) poke() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Pod is the pod as the calls show it (metadata and the containers
// created so far).
func (p *Pod) Pod() *corev1.Pod {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.spec()
}

// Joined says whether podstep joined the pod late: it first saw the pod's
// sandbox in a node-level list, not created through the proxy.
func (p *Pod) Joined() bool {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.joined
}

// PodState is the pod's status after its last step.
func (p *Pod) PodState() podstate.Snapshot {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.prev
}

// NextStep is the step of the oldest held call of the pod, if any.
func (p *Pod) NextStep() (steps.Step, bool) {
	h := p.w.opts.Hold
	if h == nil {
		return steps.Step{}, false
	}
	for _, x := range h.Held() {
		if x.Pod != p {
			continue
		}
		for _, s := range p.Steps() {
			if s.Name == x.Step && s.State == steps.Running {
				return s, true
			}
		}
	}
	return steps.Step{}, false
}

// Failed is the first failed step, if any.
func (p *Pod) Failed() (steps.Step, bool) {
	for _, s := range p.Steps() {
		if s.State == steps.Failed {
			return s, true
		}
	}
	return steps.Step{}, false
}

// Next lets the oldest held call go (the TUI's next key).
func (p *Pod) Next(context.Context) (steps.Step, error) {
	s, ok := p.NextStep()
	if !ok || !p.w.opts.Hold.Release() {
		return steps.Step{}, ErrNothingHeld
	}
	return s, nil
}

// Continue lets every held call go, and the rest of their stage.
func (p *Pod) Continue(context.Context) error {
	if h := p.w.opts.Hold; h != nil {
		h.Continue()
	}
	return nil
}

// Retry refuses: see ErrRetry.
func (p *Pod) Retry() error { return ErrRetry }

// ToggleBreakStage holds (or stops holding) the calls of stage.
func (p *Pod) ToggleBreakStage(st steps.Stage) bool {
	if h := p.w.opts.Hold; h != nil {
		return h.ToggleStage(st)
	}
	return false
}

// ToggleBreakStep is not supported: the kubelet's steps are not known in
// advance. It returns false.
func (p *Pod) ToggleBreakStep(int) bool { return false }

// ContainerLogPath is the container's current CRI log file: the sandbox's
// log directory and the container's log path, as the kubelet sent them.
func (p *Pod) ContainerLogPath(name string) string {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	k := p.containers[name]
	if k == nil || k.logPath == "" || p.config.GetLogDirectory() == "" {
		return ""
	}
	return filepath.Join(p.config.GetLogDirectory(), k.logPath)
}

// ContainerLog is the end of a container's log, masked.
func (p *Pod) ContainerLog(name string, max int) ([]steps.LogLine, error) {
	path := p.ContainerLogPath(name)
	if path == "" {
		return nil, steps.ErrNoContainer
	}
	return steps.ReadLog(path, max, p.w.red)
}

// Redactor is the watcher's redactor.
func (p *Pod) Redactor() *cri.Redactor { return p.w.red }
