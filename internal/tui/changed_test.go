package tui

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/podstate"
)

// TestHighlightIsTheStepsChanges walks the init pod one step at a time
// and checks, after each, that the pod pane highlights exactly what the
// step's Changes name (columns, phase, conditions, containers), that the
// events pane marks exactly the step's Events, and that the step pane says
// the changes in words (what a reader without colour, NO_COLOR, has).
func TestHighlightIsTheStepsChanges(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/init.yaml")), Options{})
	st := h.m.st
	sawChange, sawEvent := false, false
	for h.m.nextID != 0 {
		h.press("space")
		s := h.m.steps[h.m.lastID-1]
		changed := map[string]bool{}
		for _, c := range s.Changes {
			changed[c.Field] = true
			if typ := c.Condition(); typ != "" {
				changed["condition "+typ] = true
			}
			if name, init := c.Container(); name != "" {
				changed[containerKey(name, init)] = true
			}
		}
		sawChange = sawChange || len(s.Changes) > 0
		sawEvent = sawEvent || len(s.Events) > 0

		pane := strings.Join(h.m.podP.lines(h.m.view(), 200), "\n")
		lit := func(text string) bool { return strings.Contains(pane, st.Changed.Render(text)) }
		pod := h.m.pod
		ip := pod.Status.PodIP
		if ip == "" {
			ip = "<none>"
		}
		checks := []struct {
			what string
			lit  bool
			want bool
		}{
			{"STATUS " + pod.Display, lit(pod.Display), changed[podstate.FieldStatus]},
			{"READY " + pod.Ready, lit(pod.Ready), changed[podstate.FieldReady]},
			{"IP " + ip, lit(ip), changed[podstate.FieldPodIP]},
			{"phase " + string(pod.Status.Phase), lit(string(pod.Status.Phase)), changed[podstate.FieldPhase]},
		}
		for _, c := range pod.Status.Conditions {
			if c.Type != corev1.PodScheduled {
				checks = append(checks, struct {
					what string
					lit  bool
					want bool
				}{"condition " + string(c.Type), lit(string(c.Type)), changed["condition "+string(c.Type)]})
			}
		}
		for i, c := range allStatuses(pod) {
			init := i < len(pod.Status.InitContainerStatuses)
			checks = append(checks, struct {
				what string
				lit  bool
				want bool
			}{"container " + c.Name, lit(containerState(c)), changed[containerKey(c.Name, init)]})
		}
		for _, c := range checks {
			if c.lit != c.want {
				t.Errorf("after step %d %s: %s highlighted %v, want %v (changes %v)", s.ID, s.Name, c.what, c.lit, c.want, s.Changes)
			}
		}

		events := strings.Join(h.m.evs.eventLines(h.m.view(), pod.Events, 1000, 200), "\n")
		if n := strings.Count(events, st.Changed.Render("•")); n != len(s.Events) {
			t.Errorf("after step %d %s: %d events marked, want its %d", s.ID, s.Name, n, len(s.Events))
		}

		words := strings.Join(strings.Fields(ansiStrip(strings.Join(h.m.pane.render(h.m.view(), s, 100), "\n"))), " ")
		want := "pod: unchanged"
		if len(s.Changes) > 0 {
			want = "pod: " + podstate.FormatChanges(s.Changes)
		}
		if !strings.Contains(words, want) {
			t.Errorf("after step %d %s: the step pane lacks %q:\n%s", s.ID, s.Name, want, words)
		}
	}
	if !sawChange || !sawEvent {
		t.Errorf("the run had no change (%v) or no event (%v) to check", sawChange, sawEvent)
	}
}
