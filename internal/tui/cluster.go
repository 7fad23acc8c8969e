package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// ClusterSource reads what the cluster says about the real pod podstep
// replays (`run --pod`): its phase, container states and Events, as
// session.Options.ClusterView does at the end of the run. A view with
// Error set and a nil error are both fine; a nil view with an error says
// the view could not be read.
type ClusterSource func(ctx context.Context) (*cluster.PodView, error)

// clusterModel is the cluster pane: what the API server says about the
// real pod, shown (K) in place of the pod and events panes, under the step
// pane, so the cluster's reason sits beside podstep's failing step. It is
// read at the start, at the end of the run and on K, each time in a
// command: the UI never waits for the API server.
type clusterModel struct {
	*common
	src ClusterSource
	// shown: K put the pane up.
	shown bool
	// v is the last view read (nil: none yet), err why the last read
	// failed, at when it was read.
	v   *cluster.PodView
	err string
	at  time.Time
	// loading: a read is under way; again: read once more after it (a
	// run ended or K was pressed meanwhile).
	loading, again bool
	scroll         int
}

// fetch reads the view in a command, unless a read is under way (then
// once more after it).
func (c *clusterModel) fetch(ctx context.Context) tea.Cmd {
	if c.src == nil {
		return nil
	}
	if c.loading {
		c.again = true
		return nil
	}
	c.loading = true
	src, now := c.src, c.now
	return func() tea.Msg {
		v, err := src(ctx)
		return clusterMsg{v: v, err: err, at: now()}
	}
}

// got takes a view read; it returns the next read when one was asked for meanwhile.
func (c *clusterModel) got(ctx context.Context, msg clusterMsg) tea.Cmd {
	c.loading = false
	c.err = ""
	switch {
	case msg.v != nil:
		c.v = msg.v
	case msg.err != nil:
		c.err = msg.err.Error()
	}
	c.at = msg.at
	if c.again {
		c.again = false
		return c.fetch(ctx)
	}
	return nil
}

// title is the cluster pane's title rule.
func (c *clusterModel) title(w int) string {
	t := c.st.Title.Render("cluster")
	if c.v != nil {
		t += " " + c.st.Dim.Render("─ pod/"+line(c.v.Pod)+" · API server "+line(c.v.Server))
	}
	return c.st.rule(t, w)
}

// view is the pane's h lines of w cells.
func (c *clusterModel) view(rv runView, w, h int) []string {
	lines := c.lines(rv, w-1)
	if c.scroll > len(lines)-h {
		c.scroll = max(0, len(lines)-h)
	}
	win, _ := window(lines, c.scroll, h)
	for i, l := range win {
		win[i] = fit(" "+l, w)
	}
	if rest := len(lines) - c.scroll - h; rest > 0 && h > 1 {
		win[h-1] = fit(c.st.Dim.Render(fmt.Sprintf(" ↓ %d more (pgdn)", rest)), w)
	}
	return win
}

// lines is the pane in full: podstep's failing step (or where the run
// is) and the cluster's reason first, one above the other, then the
// cluster's pod, its containers and its Events. Every text from the API
// server goes through line: nothing raw reaches the terminal.
func (c *clusterModel) lines(rv runView, w int) []string {
	st := c.st
	var out []string
	wrap := func(style func(...string) string, prefix, s string) {
		for i, l := range render.Wrap(s, w-len(prefix)) {
			if i == 0 {
				out = append(out, style(prefix+l))
			} else {
				out = append(out, style(strings.Repeat(" ", len(prefix))+l))
			}
		}
	}
	plain := func(s ...string) string { return strings.Join(s, "") }

	// podstep's side.
	wrap(st.Bold.Render, "podstep: ", c.podstepSays(rv))
	// The cluster's side.
	switch {
	case c.v == nil && c.err != "":
		wrap(st.Failed.Render, "cluster: ", "could not read it: "+line(c.err))
	case c.v == nil:
		out = append(out, st.Dim.Render("cluster: reading the pod and its Events from the API server…"))
		return out
	case c.v.Error != "":
		wrap(st.Failed.Render, "cluster: ", "could not read it: "+line(c.v.Error))
	default:
		wrap(st.Bold.Render, "cluster: ", c.clusterSays())
	}
	read := "read " + c.at.UTC().Format("15:04:05")
	if c.loading {
		read = "reading again…"
	}
	out = append(out, st.Dim.Render(read+" · K hides · pgdn scrolls"))
	v := c.v
	if v == nil || v.Error != "" {
		return out
	}
	out = append(out, "")
	ph := v.Phase
	if v.Reason != "" {
		ph += " (" + v.Reason + ")"
	}
	out = append(out, st.Dim.Render("phase ")+line(ph)+st.Dim.Render("  node ")+line(orNone(v.Node))+st.Dim.Render("  resourceVersion ")+line(orNone(v.ResourceVersion)))
	if v.Message != "" {
		wrap(plain, "message: ", line(v.Message))
	}
	for _, ct := range v.Containers {
		wrap(plain, "", line(ct.Line()))
	}
	out = append(out, "")
	if len(v.Events) == 0 {
		out = append(out, st.Dim.Render("events: none"))
	} else {
		out = append(out, st.Title.Render(fmt.Sprintf("events (%d, oldest first)", len(v.Events))))
	}
	for _, e := range v.Events {
		style := plain
		if e.Type == "Warning" {
			style = st.Warning.Render
		}
		head := line(e.Reason) + " " + st.Dim.Render(line(e.Source))
		if e.Count > 1 {
			head += st.Dim.Render(fmt.Sprintf(" x%d", e.Count))
		}
		out = append(out, style(line(e.Type)+" ")+head)
		wrap(plain, "  ", line(e.Message))
	}
	for _, n := range v.Notes {
		wrap(st.Dim.Render, "note: ", line(n))
	}
	return out
}

// podstepSays is podstep's side in one sentence: the failing step and
// why, else where the run is.
func (c *clusterModel) podstepSays(rv runView) string {
	if f, ok := rv.stepByID(rv.failedID); ok {
		msg := f.Result.Summary
		if f.Result.Reason != "" {
			msg = f.Result.Reason + ": " + f.Result.Message
		}
		return fmt.Sprintf("✗ step %d %s failed: %s", f.ID, line(f.Name), line(msg))
	}
	if rv.running.busy {
		return "running…"
	}
	if s, ok := rv.stepByID(rv.nextID); ok {
		return fmt.Sprintf("next step %d %s (pod %s so far)", s.ID, line(s.Name), line(rv.pod.Display))
	}
	for _, s := range rv.steps {
		if s.State == steps.Done {
			return "✓ all steps done: pod " + line(rv.pod.Display)
		}
	}
	return "pod " + line(rv.pod.Display)
}

// clusterSays is the cluster's side in one sentence: the newest Warning
// Event (what `kubectl describe` ends with), else a waiting or terminated
// container's reason, else the phase.
func (c *clusterModel) clusterSays() string {
	v := c.v
	for i := len(v.Events) - 1; i >= 0; i-- {
		if e := v.Events[i]; e.Type == "Warning" {
			s := fmt.Sprintf("%s (%s", line(e.Reason), line(e.Source))
			if e.Count > 1 {
				s += fmt.Sprintf(", x%d", e.Count)
			}
			return s + "): " + line(e.Message)
		}
	}
	for _, ct := range v.Containers {
		if ct.Reason != "" && ct.State != "running" {
			s := fmt.Sprintf("%s %s: %s", line(ct.Name), line(ct.State), line(ct.Reason))
			if ct.Message != "" {
				s += ": " + line(ct.Message)
			}
			return s
		}
	}
	s := "phase " + line(v.Phase)
	if v.Reason != "" {
		s += " (" + line(v.Reason) + ")"
	}
	return s + ", no Warning event"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
