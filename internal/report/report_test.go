package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fatih/color"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// hookFailed is a failed postStart hook step as the engine reports it: its
// warning is also one of its events.
func hookFailed() steps.Event {
	evs := []podstate.Event{
		{Type: "Normal", Reason: "Started", Object: "spec.containers{app}", Message: "Started container app"}, // an earlier step's
		{Type: "Warning", Reason: "FailedPostStartHook", Object: "spec.containers{app}", Message: "PostStartHook failed"},
		{Type: "Normal", Reason: "Killing", Object: "spec.containers{app}", Message: "FailedPostStartHook"},
	}
	pod := &podstate.Snapshot{Display: "PostStartHookError", Ready: "0/1", Events: evs}
	return steps.Event{Kind: steps.StepDone, Pod: pod, Step: steps.Step{
		ID: 11, Stage: steps.StagePostStart, Name: "post-start/app", State: steps.Failed, Duration: time.Millisecond,
		Result: steps.Result{Summary: "postStart hook failed", Reason: "PostStartHookError", Message: "exited with 1",
			Warnings: []string{"FailedPostStartHook: PostStartHook failed", "SomethingElse: not an event"}},
		Pod: pod,
		Changes: []podstate.Change{
			{Field: podstate.FieldStatus, From: "Running", To: "PostStartHookError"},
			{Field: podstate.FieldReady, From: "1/1", To: "0/1"},
		},
		Events: evs[1:],
	}}
}

// dnsWarned is a sandbox step done with the kubelet's MissingClusterDNS
// warning event, and a warning of podstep's own.
func dnsWarned() steps.Event {
	evs := []podstate.Event{{Type: "Warning", Reason: "MissingClusterDNS", Object: "pod/hook", Message: "kubelet does not have ClusterDNS IP configured"}}
	pod := &podstate.Snapshot{Display: "Pending", Ready: "0/1", Events: evs}
	return steps.Event{Kind: steps.StepDone, Pod: pod, Step: steps.Step{
		ID: 6, Stage: steps.StageSandbox, Name: "run-sandbox", State: steps.Done, Duration: 9200 * time.Microsecond, Pod: pod,
		Result: steps.Result{Summary: "sandbox 95335e602f3f2 running",
			Warnings: []string{"MissingClusterDNS: kubelet does not have ClusterDNS IP configured", "NotAnEvent: podstep's own"}},
		Events: evs,
	}}
}

// quiet is a step that changed nothing and recorded no event.
func quiet() steps.Event {
	pod := &podstate.Snapshot{Display: "Running", Ready: "1/1"}
	return steps.Event{Kind: steps.StepDone, Pod: pod, Step: steps.Step{
		ID: 3, Stage: steps.StageVolumes, Name: "volumes", State: steps.Done, Pod: pod,
		Result: steps.Result{Summary: "the pod has no volumes"},
	}}
}

func TestStepText(t *testing.T) {
	defer func(old bool) { color.NoColor = old }(color.NoColor)
	color.NoColor = true
	cases := []struct {
		name, format string
		ev           steps.Event
		want         string
	}{
		{"text", Text, hookFailed(), `✗ 11 post-start   postStart hook failed 1.0ms
       warning: SomethingElse: not an event
       PostStartHookError: exited with 1
       pod: STATUS Running → PostStartHookError · READY 1/1 → 0/1
       Warning   FailedPostStartHook   pod/hook   PostStartHook failed
       Normal    Killing               pod/hook   FailedPostStartHook
`},
		{"short", Short, hookFailed(), `✗ 11 post-start   postStart hook failed 1.0ms
       warning: FailedPostStartHook: PostStartHook failed
       warning: SomethingElse: not an event
       PostStartHookError: exited with 1
`},
		{"nothing changed", Text, quiet(), "✓  3 volumes      the pod has no volumes 0.0ms\n"},
		// -q: a step that went through prints no event's warning (it
		// printed MissingClusterDNS on every pod of a node without DNS);
		// podstep's own warnings stay.
		{"short, a warning event of a step done", Short, dnsWarned(), `✓  6 sandbox      sandbox 95335e602f3f2 running 9.2ms
       warning: NotAnEvent: podstep's own
`},
		{"text, a warning event of a step done", Text, dnsWarned(), `✓  6 sandbox      sandbox 95335e602f3f2 running 9.2ms
       warning: NotAnEvent: podstep's own
       Warning   MissingClusterDNS   pod/hook   kubelet does not have ClusterDNS IP configured
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := New(&b, tc.format)
			p.SetPod("default/hook")
			p.Observe(tc.ev)
			if got := b.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestStepTextColour: on a terminal the changes' label and the warning
// events are coloured; with NO_COLOR (color.NoColor) the words alone say it.
func TestStepTextColour(t *testing.T) {
	defer func(old bool) { color.NoColor = old }(color.NoColor)
	for _, noColor := range []bool{false, true} {
		color.NoColor = noColor
		var b bytes.Buffer
		p := New(&b, Text)
		p.Start(render.Runtime{Endpoint: "unix:///x.sock"}, "default/hook")
		p.Observe(hookFailed())
		out := b.String()
		if has := strings.Contains(out, "\x1b["); has == noColor {
			t.Errorf("NoColor %v: escape codes %v in\n%q", noColor, has, out)
		}
		warn := color.New(color.FgYellow).Sprint("Warning   FailedPostStartHook   pod/hook   PostStartHook failed")
		if !strings.Contains(out, warn) {
			t.Errorf("NoColor %v: the warning event is not %q in\n%q", noColor, warn, out)
		}
	}
}

// TestStepJSON: changes and events are the step's own, always arrays.
func TestStepJSON(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, JSON)
	p.Observe(hookFailed())
	p.Observe(quiet())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), b.String())
	}
	type step struct {
		Changes []podstate.Change `json:"changes"`
		Events  []podstate.Event  `json:"events"`
	}
	var hook step
	if err := json.Unmarshal([]byte(lines[0]), &hook); err != nil {
		t.Fatal(err)
	}
	if len(hook.Changes) != 2 || hook.Changes[0] != (podstate.Change{Field: "status", From: "Running", To: "PostStartHookError"}) {
		t.Errorf("changes = %v", hook.Changes)
	}
	if len(hook.Events) != 2 || hook.Events[0].Reason != "FailedPostStartHook" || hook.Events[1].Reason != "Killing" {
		t.Errorf("events = %v, want the step's FailedPostStartHook and Killing only", hook.Events)
	}
	if !strings.Contains(lines[1], `"changes":[],"events":[]`) {
		t.Errorf("a step that changed nothing: %s, want \"changes\":[],\"events\":[]", lines[1])
	}
}

// writeCounter counts the writes it is given.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestStepTextOneWrite: a step's lines (summary, warnings, changes,
// events) reach the writer in one write, not one a line: stdout's writes
// were a tenth of a 1,000-container run's system calls (issue 34).
func TestStepTextOneWrite(t *testing.T) {
	for _, format := range []string{Text, Short} {
		t.Run(format, func(t *testing.T) {
			var w writeCounter
			p := New(&w, format)
			p.SetPod("default/hook")
			p.Observe(hookFailed())
			if lines := strings.Count(w.String(), "\n"); lines < 2 || w.writes != 1 {
				t.Errorf("%d lines in %d writes, want them in 1 (and more than 1 line):\n%s", lines, w.writes, w.String())
			}
		})
	}
}
