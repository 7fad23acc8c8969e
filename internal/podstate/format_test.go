package podstate

import (
	"strings"
	"testing"
)

func TestFormatChanges(t *testing.T) {
	cases := []struct {
		name    string
		changes []Change
		want    string
	}{
		{"nothing", nil, ""},
		{"the issue's example", []Change{
			{FieldStatus, "ContainerCreating", "Running"},
			{FieldReady, "0/1", "1/1"},
			{"status.conditions[Initialized].status", "False", "True"},
			{"status.containerStatuses[app].state", "waiting ContainerCreating", "running"},
			{FieldPodIP, "", "10.88.0.5"},
		}, "STATUS ContainerCreating → Running · READY 0/1 → 1/1 · Initialized False → True · app: waiting ContainerCreating → running · IP 10.88.0.5"},
		{"pod fields", []Change{
			{FieldRestarts, "0", "1"},
			{FieldPhase, "Pending", "Failed"},
			{FieldReason, "", "OutOfcpu"},
			{FieldHostIP, "", "192.168.1.10"},
		}, "RESTARTS 0 → 1 · phase Pending → Failed · reason OutOfcpu · host IP 192.168.1.10"},
		{"gone", []Change{
			{FieldPodIP, "10.88.0.5", ""},
			{"status.conditions[Ready].status", "False", ""},
			{"status.containerStatuses[app].state", "running", ""},
		}, "IP 10.88.0.5 → <none> · Ready False → <none> · app: running → <none>"},
		{"containers grouped while they follow one another", []Change{
			{"status.initContainerStatuses[setup].state", "running", "terminated Completed (exit 0)"},
			{"status.initContainerStatuses[setup].ready", "false", "true"},
			{"status.initContainerStatuses[setup].started", "true", "false"},
			{"status.containerStatuses[app].ready", "true", "false"},
			{"status.containerStatuses[app].restartCount", "0", "1"},
			{"status.containerStatuses[web].started", "false", "true"},
		}, "setup: running → terminated Completed (exit 0), ready, not started · app: not ready, restarts 0 → 1 · web: started"},
		{"fields it does not know read as their paths", []Change{
			{"status.nominatedNodeName", "", "n1"},
			{"status.containerStatuses[app].lastState", "", "terminated Error (exit 1)"},
			{"status.containerStatuses[app].ready", "", "maybe"},
		}, "status.nominatedNodeName n1 · app: lastState terminated Error (exit 1), ready maybe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatChanges(tc.changes); got != tc.want {
				t.Errorf("FormatChanges =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

func TestFormatEvent(t *testing.T) {
	cases := []struct {
		name, pod string
		e         Event
		want      string
	}{
		{"a container's event", "hello", ev(1, "Normal", "Pulled", `Container image "busybox:1.35" already present on machine`),
			`Normal   Pulled   pod/hello   Container image "busybox:1.35" already present on machine`},
		{"the pod's event", "big", Event{Type: "Warning", Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"},
			"Warning   OutOfcpu   pod/big   Node didn't have enough resource: cpu"},
		// kubectl trims the message; its tab writer makes a column at least 6 wide.
		{"trimmed message, short cells", "p", Event{Type: "X", Reason: "Y", Message: "  spaced out \n"},
			"X     Y     pod/p   spaced out"},
		{"no pod name", "", Event{Type: "Normal", Reason: "Started", Message: "Started container app"},
			"Normal   Started   pod   Started container app"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatEvent(tc.pod, tc.e); got != tc.want {
				t.Errorf("FormatEvent =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestFormatEventsAligns(t *testing.T) {
	got := FormatEvents("hook", []Event{
		{Type: "Warning", Reason: "FailedPostStartHook", Message: "PostStartHook failed"},
		{Type: "Normal", Reason: "Killing", Message: "FailedPostStartHook"},
	})
	want := []string{
		"Warning   FailedPostStartHook   pod/hook   PostStartHook failed",
		"Normal    Killing               pod/hook   FailedPostStartHook",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("FormatEvents =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if FormatEvents("hook", nil) != nil {
		t.Error("FormatEvents of no events is not nil")
	}
}
