package podstate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTrackerRedactsMessages: with SetRedact, every message the tracker
// stores (events, waiting, hook and terminated messages, the pod's
// rejection message) is stored masked, so every snapshot is.
func TestTrackerRedactsMessages(t *testing.T) {
	const secret = "S3cret-Value-001"
	mask := func(s string) string { return strings.ReplaceAll(s, secret, "<m>") }
	for _, tc := range []struct {
		name   string
		record func(*Tracker)
		got    func(Snapshot) string
	}{
		{"event", func(tr *Tracker) { tr.Record("Warning", "Failed", "", "exec: "+secret) },
			func(s Snapshot) string { return s.Events[0].Message }},
		{"waiting", func(tr *Tracker) { tr.Waiting("app", "CreateContainerConfigError", "SubPath `/"+secret+"`") },
			func(s Snapshot) string { return s.Status.ContainerStatuses[0].State.Waiting.Message }},
		{"hook", func(tr *Tracker) { tr.HookFailed("app", "output "+secret) },
			func(s Snapshot) string { return s.Status.ContainerStatuses[0].State.Waiting.Message }},
		{"terminated", func(tr *Tracker) { tr.Terminated("app", 1, "Error", "log: "+secret, at(1), at(2)) },
			func(s Snapshot) string { return s.Status.ContainerStatuses[0].State.Terminated.Message }},
		{"rejected", func(tr *Tracker) { tr.Rejected("Bad", "value "+secret) },
			func(s Snapshot) string { return s.Status.Message }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, nil, ctr("app")))
			tr.SetRedact(mask)
			tc.record(tr)
			if got := tc.got(tr.Snapshot()); strings.Contains(got, secret) || !strings.Contains(got, "<m>") {
				t.Errorf("stored message %q, want the secret masked", got)
			}
		})
	}
}
