package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/podstate"
)

// podModel is the pod pane: the pod's status as kubectl shows it. It has
// no state of its own; the root sizes it to its lines (layoutFor).
type podModel struct {
	*common
}

// lines renders the pod pane's content as lines of at most w cells:
// `kubectl get pod`, phase and conditions, then one line per container.
// What the last step changed (its Changes) is highlighted.
func (m *podModel) lines(rv runView, w int) []string {
	st := m.st
	now, last := rv.pod, rv.last
	hl := func(s string, changed bool) string {
		if changed {
			return st.Changed.Render(s)
		}
		return s
	}
	ip := now.Status.PodIP
	if ip == "" {
		ip = "<none>"
	}
	name := line(rv.podName)
	cols := []struct {
		head, val string
		changed   bool
	}{
		{"NAME", name, false},
		{"READY", line(now.Ready), last.field(podstate.FieldReady) || rv.down.ready != "" && rv.down.by == rv.lastID},
		{"STATUS", line(now.Display), last.field(podstate.FieldStatus) || rv.down.on && rv.down.first == rv.lastID},
		{"RESTARTS", fmt.Sprint(now.Restarts), last.field(podstate.FieldRestarts)},
		{"IP", ip, last.field(podstate.FieldPodIP)},
	}
	// kubectl separates columns by 3 spaces; use fewer when the pane is
	// narrow. Narrower still, NAME goes (the header names the pod), then
	// the IP moves under the table (an IPv6 is long), never cut.
	width := func() int {
		total := 0
		for _, c := range cols {
			total += max(len(c.head), lipgloss.Width(c.val))
		}
		return total + len(cols) - 1
	}
	var ipTok string
	if width() > w {
		cols = cols[1:]
	}
	if width() > w {
		ipTok = st.Dim.Render("IP ") + hl(line(ip), cols[len(cols)-1].changed)
		cols = cols[:len(cols)-1]
	}
	total := width() - (len(cols) - 1)
	gap := 3
	for gap > 1 && total+gap*(len(cols)-1) > w {
		gap--
	}
	var head, vals strings.Builder
	for i, c := range cols {
		cw := max(len(c.head), lipgloss.Width(c.val))
		if i < len(cols)-1 {
			cw += gap
		}
		head.WriteString(fit(c.head, cw))
		vals.WriteString(fit(hl(c.val, c.changed), cw))
	}
	out := []string{st.Dim.Render(head.String()), vals.String()}

	// Phase and conditions, as `kubectl describe pod` lists them.
	toks := []string{st.Dim.Render("phase ") + hl(line(string(now.Status.Phase)), last.field(podstate.FieldPhase))}
	if ipTok != "" {
		toks = append([]string{ipTok}, toks...)
	}
	for _, c := range now.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			continue // always true on a kubelet: the pod reached the node
		}
		mark := st.Failed.Render("✗")
		if c.Status == corev1.ConditionTrue {
			mark = st.Done.Render("✓")
		}
		toks = append(toks, hl(line(string(c.Type)), last.condition(string(c.Type)))+" "+mark)
	}
	out = append(out, wrapTokens(toks, w, "  ")...)

	// Containers, init containers first.
	nw := 0
	for _, c := range allStatuses(now) {
		nw = max(nw, lipgloss.Width(line(c.Name))+5)
	}
	initN := len(now.Status.InitContainerStatuses)
	for i, c := range allStatuses(now) {
		label := line(c.Name)
		if i < initN {
			label = "init:" + label
		}
		state, changed := containerState(c), last.container(c.Name, i < initN)
		if down := rv.down.container(c); down != "" {
			// The teardown's (teardown.go), highlighted after the step that did it.
			state, changed = down, rv.down.by == rv.lastID
		}
		out = append(out, fit(label, nw+1)+hl(line(state), changed))
	}
	return out
}

// view is the pod pane's h lines of w cells from its lines; a pod with
// more ends "… N more".
func (m *podModel) view(pod []string, w, h int) []string {
	win, _ := window(pod, 0, h)
	if n := len(pod) - h; n > 0 {
		win[h-1] = m.st.Dim.Render(fmt.Sprintf("… %d more", n+1))
	}
	for i, p := range win {
		win[i] = fit(" "+p, w)
	}
	return win
}

func allStatuses(s podstate.Snapshot) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(s.Status.InitContainerStatuses)+len(s.Status.ContainerStatuses))
	out = append(out, s.Status.InitContainerStatuses...)
	return append(out, s.Status.ContainerStatuses...)
}

// containerState says a container's state as `kubectl describe` does.
func containerState(c corev1.ContainerStatus) string {
	switch {
	case c.State.Running != nil:
		s := "running since " + c.State.Running.StartedAt.Format("15:04:05")
		if c.Ready {
			s += ", ready"
		}
		return s
	case c.State.Terminated != nil:
		t := c.State.Terminated
		s := fmt.Sprintf("terminated: exit code %d", t.ExitCode)
		if t.Reason != "" {
			s += " (" + t.Reason + ")"
		}
		return s
	case c.State.Waiting != nil:
		s := "waiting: " + c.State.Waiting.Reason
		if c.State.Waiting.Message != "" {
			s += ": " + c.State.Waiting.Message
		}
		return s
	}
	return "unknown"
}
