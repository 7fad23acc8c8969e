package steps

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
)

// TestRestartRulesGate runs the restart-rule scenarios with
// ContainerRestartRules on (v1.37's default) and off: off, the API server
// drops the container fields and the pod's restartPolicy alone decides, as
// before KEP-5307 (the admit step warns of the dropped fields).
func TestRestartRulesGate(t *testing.T) {
	off, _ := gate.Parse("ContainerRestartRules=false")
	for _, tc := range []struct {
		file    string
		g       gate.Gates
		reason  string
		phase   corev1.PodPhase
		display string
		warned  bool
	}{
		{"restart-rule-exit-code", gate.Gates{}, "CrashLoopBackOff", corev1.PodRunning, "CrashLoopBackOff", false},
		{"restart-rule-exit-code", off, "Error", corev1.PodFailed, "Error", true},
		{"restart-policy-never", gate.Gates{}, "Error", corev1.PodFailed, "Error", false},
		{"restart-policy-never", off, "CrashLoopBackOff", corev1.PodRunning, "CrashLoopBackOff", true},
	} {
		t.Run(tc.file+"/"+tc.g.String(), func(t *testing.T) {
			o := testOptions(t)
			o.Config.Gates = tc.g
			e := runAll(t, load(t, repoFile("internal/scenario/data/"+tc.file+".yaml")), newSim(t), o)
			defer teardown(t, e)
			s, failed := e.Failed()
			if !failed || s.Result.Reason != tc.reason {
				t.Fatalf("failed %v with %q, want %q", failed, s.Result.Reason, tc.reason)
			}
			st := e.PodState()
			if st.Status.Phase != tc.phase || st.Display != tc.display {
				t.Errorf("phase %s display %s, want %s %s", st.Status.Phase, st.Display, tc.phase, tc.display)
			}
			admit := e.Steps()[0]
			warned := strings.Contains(strings.Join(admit.Result.Warnings, "\n"), "restartPolicyRules were dropped")
			if warned != tc.warned {
				t.Errorf("admit warnings %q, want a dropped-fields warning: %v", admit.Result.Warnings, tc.warned)
			}
		})
	}
}

// TestRestartAllContainers runs the RestartAllContainers scenario: the
// pod gets the AllContainersRestarting condition (False until the rule
// matches), each exit of "app" is followed by a reset step that kills the
// running helper and removes every container (helper first, app last),
// then both containers are created again with attempt+1; after
// --max-restarts resets podstep gives up.
func TestRestartAllContainers(t *testing.T) {
	b := load(t, repoFile("internal/scenario/data/restart-all-containers.yaml"))
	e := New(b, newSim(t), testOptions(t))
	cond := func() *corev1.PodCondition {
		for _, c := range e.PodState().Status.Conditions {
			if c.Type == corev1.AllContainersRestarting {
				return &c
			}
		}
		return nil
	}
	if c := cond(); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("before the run: AllContainersRestarting = %+v, want False", c)
	}
	var sawTrue bool
	e.Subscribe(func(ev Event) {
		if ev.Kind == StepDone && ev.Pod != nil {
			for _, c := range ev.Pod.Status.Conditions {
				if c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue && c.Reason == "RestartAllContainersStarted" {
					sawTrue = true
				}
			}
		}
	})
	for !e.Finished() {
		if err := e.Continue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	defer teardown(t, e)
	if !sawTrue {
		t.Error("AllContainersRestarting never turned True")
	}
	var resets []Step
	var creates []string
	for _, s := range e.Steps() {
		switch s.Kind {
		case KindReset:
			resets = append(resets, s)
		case KindCreate:
			if s.State == Done {
				creates = append(creates, s.Name)
			}
		}
	}
	if len(resets) != 2 {
		t.Fatalf("%d reset steps, want 2 (--max-restarts 2)", len(resets))
	}
	var methods []string
	for _, c := range resets[0].Calls {
		methods = append(methods, c.Method)
	}
	// getContainersToReset: the target (helper, running: killed) first, the
	// source (app, exited) last.
	if got := strings.Join(methods, ","); got != "StopContainer,RemoveContainer,RemoveContainer" {
		t.Errorf("reset calls %s, want StopContainer,RemoveContainer,RemoveContainer", got)
	}
	// SyncPod kills with the override 0, which killContainer raises to
	// minimumGracePeriodInSeconds: StopContainer's timeout is 2, in the
	// planned request and in the call sent.
	var planned []int64
	for _, r := range resets[0].Requests {
		if m, ok := r.Message.(*runtimeapi.StopContainerRequest); ok {
			planned = append(planned, m.GetTimeout())
		}
	}
	var sent []int64
	for _, c := range resets[0].Calls {
		if m, ok := c.Request.(*runtimeapi.StopContainerRequest); ok {
			sent = append(sent, m.GetTimeout())
		}
	}
	if fmt.Sprint(planned) != "[2]" || fmt.Sprint(sent) != "[2]" {
		t.Errorf("reset StopContainer timeouts: planned %v, sent %v; want [2] (killContainer's minimum grace period)", planned, sent)
	}
	if len(creates) != 6 {
		t.Errorf("creates %v, want 3 rounds of app and helper", creates)
	}
	for _, cs := range e.PodState().Status.ContainerStatuses {
		if cs.RestartCount != 2 {
			t.Errorf("%s restartCount %d, want 2", cs.Name, cs.RestartCount)
		}
	}
	if s, failed := e.Failed(); !failed || !strings.Contains(s.Result.Message, "gave up: the pod was reset 2 times") {
		t.Errorf("failed %v: %+v", failed, s.Result)
	}
}
