package report

import (
	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// The text printer shows what runtimes, manifests, recordings and a proxied
// kubelet said: untrusted. It sanitises a copy of each step and summary
// (safe.Line: every field is shown on one line) before it colours it; the
// JSON printer writes them exact (encoding/json escapes controls).

func cleanRuntime(rt render.Runtime) render.Runtime {
	rt.Endpoint, rt.Why = safe.Line(rt.Endpoint), safe.Line(rt.Why)
	return rt
}

func cleanStep(s StepJSON) StepJSON {
	l := safe.Line
	s.Name, s.Title, s.Summary, s.Reason, s.Message = l(s.Name), l(s.Title), l(s.Summary), l(s.Reason), l(s.Message)
	s.Stage = steps.Stage(l(string(s.Stage)))
	s.Warnings = cleanStrings(s.Warnings)
	s.RestsOn = cleanStrings(s.RestsOn)
	s.Explanation = cleanExplanation(s.Explanation)
	if s.Details != nil {
		d := make([]steps.Detail, len(s.Details))
		for i, x := range s.Details {
			d[i] = steps.Detail{Key: l(x.Key), Value: l(x.Value)}
		}
		s.Details = d
	}
	if s.Calls != nil {
		c := make([]CallJSON, len(s.Calls))
		for i, x := range s.Calls {
			c[i] = CallJSON{Method: l(x.Method)}
		}
		s.Calls = c
	}
	if s.Changes != nil {
		c := make([]podstate.Change, len(s.Changes))
		for i, x := range s.Changes {
			c[i] = podstate.Change{Field: l(x.Field), From: l(x.From), To: l(x.To)}
		}
		s.Changes = c
	}
	s.Events = cleanEvents(s.Events)
	return s
}

func cleanEvents(evs []podstate.Event) []podstate.Event {
	if evs == nil {
		return nil
	}
	out := make([]podstate.Event, len(evs))
	for i, e := range evs {
		out[i] = podstate.Event{Time: e.Time, Type: safe.Line(e.Type), Reason: safe.Line(e.Reason),
			Object: safe.Line(e.Object), Message: safe.Line(e.Message)}
	}
	return out
}

// cleanExplanation sanitises an explanation: its commands hold the pod's
// names, and a recording's explanation is the recording's text.
func cleanExplanation(x *explain.Explanation) *explain.Explanation {
	if x == nil {
		return nil
	}
	l := safe.Line
	return &explain.Explanation{ID: l(x.ID), Title: l(x.Title), Causes: cleanStrings(x.Causes), Next: l(x.Next),
		Confirm: cleanStrings(x.Confirm), Fix: l(x.Fix)}
}

func cleanStrings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = safe.Line(s)
	}
	return out
}

func cleanSummary(s Summary) Summary {
	l := safe.Line
	s.Pod, s.Outcome, s.Display, s.Ready, s.PodIP = l(s.Pod), l(s.Outcome), l(s.Display), l(s.Ready), l(s.PodIP)
	if s.Failed != nil {
		f := Failure{Stage: steps.Stage(l(string(s.Failed.Stage))), Step: l(s.Failed.Step), Reason: l(s.Failed.Reason), Message: l(s.Failed.Message),
			Explanation: cleanExplanation(s.Failed.Explanation)}
		s.Failed = &f
	}
	if s.Leftover != nil {
		lb := steps.LeftBehind{Sandbox: l(s.Leftover.Sandbox), Containers: cleanStrings(s.Leftover.Containers),
			Dirs: cleanStrings(s.Leftover.Dirs), Mounts: cleanStrings(s.Leftover.Mounts)}
		s.Leftover = &lb
	}
	s.Events = cleanEvents(s.Events)
	s.RestsOn = cleanStrings(s.RestsOn)
	return s
}
