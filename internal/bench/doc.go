// Package bench is the statistics and the report of `podstep bench`: it
// turns the steps of many runs of one pod (internal/steps) into per-phase
// and per-CRI-method percentiles, the kubelet's pod-startup SLIs, the CRI
// floor against podstep's own time, a terminal histogram and a scale curve
// over concurrency levels; and it compares two results with the
// Mann-Whitney U test of golang.org/x/perf/benchmath.
//
// The command (Command, filled from the flags by cmd/podstep/bench.go)
// runs the pods through the engine (Runner) and hands each one's steps to
// Measure; Build summarises a level's pods; a
// Result is written as text (WriteText) or JSON, and read back as the
// baseline of Compare.
package bench
