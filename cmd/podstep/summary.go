package main

import (
	"time"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// podName is the pod as namespace/name.
func podName(eng *steps.Engine) string {
	return eng.Pod().Namespace + "/" + eng.Pod().Name
}

// summarize is a run's summary once creation is over, for every frontend:
// the pod as it is now and the creation's timing, created being the time
// creation took (the wall time for --auto; the steps' own time in the TUI,
// where the user's pauses do not count). settle adds the outcome and the
// teardown.
func summarize(eng *steps.Engine, c *conn, created time.Duration, kept bool) report.Summary {
	snap := eng.PodState()
	return report.Summary{Pod: podName(eng), UID: string(eng.Pod().UID), Display: snap.Display, Ready: snap.Ready,
		Restarts: snap.Restarts, PodIP: snap.Status.PodIP, Status: snap.Status, Events: snap.Events, Kept: kept,
		Timing: timing(eng, c.client.Calls(), created)}
}
