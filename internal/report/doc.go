// Package report is the --auto frontend: it turns engine events into text
// or JSON lines. It never talks to the runtime.
//
// Text (coloured on terminals) is one line per step, and under it what the
// step changed in the pod (podstate.FormatChanges of the step's Changes)
// and the kubelet events it recorded (podstate.FormatEvents), then a final
// summary line; Short is the step lines alone; JSON is one object per step
// (StepJSON, with the step's changes and events) plus a final summary.
// Changes and events are the engine's (steps.Step): the printer computes
// no diff of its own.
package report
