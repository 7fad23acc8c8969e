// Package gctune sets the garbage collector's target (GOGC) for podstep's
// commands. Its init raises it to RunPercent for the start-up every
// command shares: it imports nothing heavy, so it runs before the package
// inits that allocate most (client-go's scheme, the API types: 3.1 MB in
// all, against the default's first goal of 4 MB), which a later call, in
// main, would be too late for. Command then keeps it for `podstep run`
// only. Neither does anything when the user set GOGC or GOMEMLIMIT: the
// runtime follows what they asked for.
package gctune

import (
	"os"
	"runtime/debug"
)

// RunPercent is the target for `podstep run`: the heap may grow to 5
// times what is live before a collection, not twice. A run's live heap is
// small (2-4 MB for hello on --sim); with Go's default (100) a run of
// hello collects twice, the first time while the packages initialise; with
// 400 it does not collect at all. That is 13-15 ms of its 70-80 ms of CPU
// (perf stat, docs/measurements.md), which counts when a workshop room
// runs 30 at once on 2 cores. The heap stays small: a TUI session's grows
// to a few times 4 MB instead of twice.
const RunPercent = 400

// DefaultPercent is Go's own default target.
const DefaultPercent = 100

func init() {
	if !userSet() {
		debug.SetGCPercent(RunPercent)
	}
}

// Command sets the target once the command is known: run keeps
// RunPercent; every other command gets Go's default back (the proxy, bench
// and fleet live long or hold many pods, where the heap's size matters
// more than a few ms of collection).
func Command(name string) {
	if !userSet() && name != "run" {
		debug.SetGCPercent(DefaultPercent)
	}
}

func userSet() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

// BigPod is the number of containers above which a run collects at Go's
// default target again (Pod).
const BigPod = 64

// Pod sets the target of a run once its pod is known: a pod of more than
// BigPod containers gets Go's default back. RunPercent saves a small run
// its few collections, but the heap of a run grows with the pod's
// containers, and RunPercent lets it grow to 5× what is live: a
// 1,000-container pod's run held ~200 MB where 100 holds about half (issue
// 34). GOGC or GOMEMLIMIT set: left alone.
func Pod(containers int) {
	if !userSet() && containers > BigPod {
		debug.SetGCPercent(DefaultPercent)
	}
}
