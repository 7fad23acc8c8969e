package tui

import (
	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// line and text are safe.Line and safe.Text: what the TUI shows of
// manifests, runtimes, recordings and a proxied kubelet is untrusted, and
// goes through them before it is styled (View's safe.Terminal is the net).
func line(s string) string { return safe.Line(s) }
func text(s string) string { return safe.Text(s) }

// cleanSteps returns copies of ss whose shown texts are sanitised. IDs,
// kinds and container names (keys for the engine) stay as they are; the
// panes sanitise a container name where they show it.
func cleanSteps(ss []steps.Step) []steps.Step {
	for i := range ss {
		s := &ss[i]
		s.Name, s.Title, s.Explain, s.Mirrors = line(s.Name), line(s.Title), text(s.Explain), text(s.Mirrors)
		r := &s.Result
		r.Summary, r.Reason, r.Message = text(r.Summary), line(r.Reason), text(r.Message)
		if len(r.Details) > 0 {
			d := make([]steps.Detail, len(r.Details))
			for j, x := range r.Details {
				d[j] = steps.Detail{Key: line(x.Key), Value: line(x.Value)}
			}
			r.Details = d
		}
		if len(r.Warnings) > 0 {
			w := make([]string, len(r.Warnings))
			for j, x := range r.Warnings {
				w[j] = text(x)
			}
			r.Warnings = w
		}
		if len(r.RestsOn) > 0 {
			ro := make([]string, len(r.RestsOn))
			for j, x := range r.RestsOn {
				ro[j] = line(x)
			}
			r.RestsOn = ro
		}
		if x := r.Explanation; x != nil {
			y := explain.Explanation{ID: line(x.ID), Title: line(x.Title), Next: line(x.Next), Fix: line(x.Fix)}
			for _, c := range x.Causes {
				y.Causes = append(y.Causes, line(c))
			}
			for _, c := range x.Confirm {
				y.Confirm = append(y.Confirm, line(c))
			}
			r.Explanation = &y
		}
		if len(s.Changes) > 0 {
			c := make([]podstate.Change, len(s.Changes))
			for j, x := range s.Changes {
				c[j] = podstate.Change{Field: line(x.Field), From: line(x.From), To: line(x.To)}
			}
			s.Changes = c
		}
		if len(s.Events) > 0 {
			e := make([]podstate.Event, len(s.Events))
			for j, x := range s.Events {
				e[j] = podstate.Event{Time: x.Time, Type: line(x.Type), Reason: line(x.Reason), Object: line(x.Object), Message: line(x.Message)}
			}
			s.Events = e
		}
	}
	return ss
}
