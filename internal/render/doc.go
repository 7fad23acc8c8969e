// Package render turns what the engine reports into text the same way for
// every frontend (`podstep plan`, the --auto printer in internal/report, the
// TUI in internal/tui): CRI messages as JSON and YAML with api.proto field
// names, durations, the runtime a run talks to, and word wrapping.
//
// It holds no state and knows no frontend; frontends add their own layout
// and colours on top.
package render
