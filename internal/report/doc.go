// Package report is the --auto frontend: it turns engine events into one
// line per step (text, coloured on terminals) or one JSON object per step
// plus a final summary (-o json). It never talks to the runtime.
package report
