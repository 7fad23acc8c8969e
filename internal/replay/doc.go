// Package replay plays a recording (internal/record) back through the
// same methods the TUI uses on a live engine (tui.Engine), and more: a
// [Player] is at a position N, the state after the recording's first N
// steps ran (the plan with each step's state and calls, the pod, the
// kubelet events, the container logs), and can move to any other position,
// back as well as forward. Nothing is sent to a runtime.
package replay
