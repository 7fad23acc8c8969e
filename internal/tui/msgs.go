package tui

import (
	"time"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/steps"
)

// engineEventMsg carries one engine event into the program.
type engineEventMsg struct{ ev steps.Event }

// runDoneMsg says a Next or Continue returned; the engine is idle again.
type runDoneMsg struct {
	// op is what ran: "next", "continue" or "retry".
	op  string
	err error
}

// liveMsg says a Live engine changed (live.go).
type liveMsg struct{}

// replayLoadedMsg says the recording is read: the status line redraws (replay.go).
type replayLoadedMsg struct{}

// clusterMsg is the cluster's view of the pod, read in the background
// (cluster.go): the view, or why it could not be read, and when.
type clusterMsg struct {
	v   *cluster.PodView
	err error
	at  time.Time
}
