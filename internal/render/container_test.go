package render

import "testing"

// TestContainerLine: one container status in one line, as the text report
// and the TUI's cluster pane both say it.
func TestContainerLine(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		c    ContainerState
		want string
	}{
		{ContainerState{Name: "app"}, "container app: <none>, ready false, restarts 0"},
		{ContainerState{Name: "app", State: "running", Ready: true}, "container app: running, ready true, restarts 0"},
		{ContainerState{Name: "setup", Init: true, State: "terminated", Reason: "Error", ExitCode: &one, Restarts: 3, Message: "boom"},
			"init container setup: terminated (Error) exit code 1, ready false, restarts 3: boom"},
		{ContainerState{Name: "app", State: "waiting", Reason: "CrashLoopBackOff", Restarts: 2, Message: "back-off 20s restarting failed container"},
			"container app: waiting (CrashLoopBackOff), ready false, restarts 2: back-off 20s restarting failed container"},
	} {
		if got := ContainerLine(tc.c); got != tc.want {
			t.Errorf("ContainerLine(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
