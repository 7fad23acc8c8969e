package watch

import (
	"time"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Summary is the pod as podstep last saw it, in the summary object `podstep
// run -o json` ends with. Outcome is "removed" (the kubelet removed its
// sandbox), "stopped" (it stopped it), "failed" (a step failed and nothing recovered it), "running"
// (every container created runs) or "pending". Timing.CreateMs is from
// the first call to the end of the last creation step, CRIMs the runtime's
// share (the creation steps' calls, relists left out), OverheadMs the kubelet's own (and its waits); TeardownMs the
// teardown steps'.
func (p *Pod) Summary() report.Summary {
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	snap := p.prev
	s := report.Summary{Pod: p.Key(), UID: p.UID, Display: snap.Display, Ready: snap.Ready, Restarts: snap.Restarts,
		PodIP: snap.Status.PodIP, Status: snap.Status, Events: snap.Events, Watched: true}
	var first, createEnd time.Time
	var cri, teardown time.Duration
	var failed *steps.Step
	for i := range p.steps {
		st := &p.steps[i]
		if first.IsZero() {
			first = st.Started
		}
		s.Timing.Calls += len(st.Calls)
		end := st.Started.Add(st.Duration)
		if st.Stage == steps.StageTeardown {
			teardown += st.Duration
			continue
		}
		if st.Kind != steps.KindRelist || st.Title == "podstep joined late" {
			createEnd = end
			for _, c := range st.Calls {
				cri += c.Duration
			}
		}
		if st.State == steps.Failed {
			failed = st
		} else if failed != nil && st.Kind == failed.Kind && st.Container == failed.Container {
			failed = nil // the kubelet retried it and it went through
		}
	}
	s.Timing.CRIMs = ms(cri)
	if !createEnd.IsZero() {
		s.Timing.CreateMs = ms(createEnd.Sub(first))
		s.Timing.OverheadMs = max(0, s.Timing.CreateMs-s.Timing.CRIMs)
	}
	s.Timing.TeardownMs = ms(teardown)
	switch {
	case p.removed:
		s.Outcome = "removed"
	case p.stopping:
		s.Outcome = "stopped"
	case failed != nil:
		s.Outcome, s.ExitCode = "failed", 1
		s.Failed = &report.Failure{Stage: failed.Stage, Step: failed.Name, Reason: failed.Result.Reason, Message: failed.Result.Message,
			Explanation: failed.Result.Explanation}
	case snap.Status.Phase == "Running" || snap.Status.Phase == "Succeeded":
		s.Outcome = "running"
	default:
		s.Outcome = "pending"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
