package render

import "fmt"

// ContainerState is what ContainerLine says of a container status: the
// fields of a cluster's container status (cluster.ContainerStatus), as
// data for the formatting here.
type ContainerState struct {
	Name     string
	Init     bool
	State    string // waiting, running, terminated, or "" (no status yet)
	Reason   string
	Message  string
	ExitCode *int32
	Ready    bool
	Restarts int32
}

// ContainerLine is one container status in one line, as the text report
// and the TUI's cluster pane say it: "container app: waiting
// (CrashLoopBackOff) exit code 1, ready false, restarts 3: MESSAGE" (the
// state, reason, exit code and message as far as the status has them).
func ContainerLine(c ContainerState) string {
	kind := "container"
	if c.Init {
		kind = "init container"
	}
	state := noneIfEmpty(c.State)
	if c.Reason != "" {
		state += " (" + c.Reason + ")"
	}
	if c.ExitCode != nil {
		state += fmt.Sprintf(" exit code %d", *c.ExitCode)
	}
	s := fmt.Sprintf("%s %s: %s, ready %v, restarts %d", kind, c.Name, state, c.Ready, c.Restarts)
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
