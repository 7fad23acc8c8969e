package gctune

import (
	"runtime/debug"
	"testing"
)

// percent reads the collector's current target (SetGCPercent returns the
// one it replaces) and puts it back.
func percent() int {
	p := debug.SetGCPercent(DefaultPercent)
	debug.SetGCPercent(p)
	return p
}

func TestInitRaisesTarget(t *testing.T) {
	// The test binary ran this package's init with neither variable set
	// (go test passes the environment through: skip if the caller set one).
	if userSet() {
		t.Skip("GOGC or GOMEMLIMIT is set: init leaves the target to the runtime")
	}
	// Command has not run yet in this process.
	if got := percent(); got != RunPercent {
		t.Errorf("after init, GOGC = %d, want %d", got, RunPercent)
	}
}

func TestCommand(t *testing.T) {
	defer debug.SetGCPercent(percent())
	for _, tc := range []struct {
		name, command, gogc, memlimit string
		want                          int
	}{
		{"run keeps the start-up's target", "run", "", "", RunPercent},
		{"plan gets Go's default back", "plan", "", "", DefaultPercent},
		{"proxy gets Go's default back", "proxy", "", "", DefaultPercent},
		{"bench gets Go's default back", "bench", "", "", DefaultPercent},
		{"GOGC set: left alone", "proxy", "50", "", RunPercent},
		{"GOMEMLIMIT set: left alone", "proxy", "", "1GiB", RunPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			debug.SetGCPercent(RunPercent) // as init leaves it
			Command(tc.command)
			if got := percent(); got != tc.want {
				t.Errorf("Command(%q) with GOGC=%q GOMEMLIMIT=%q: GOGC = %d, want %d", tc.command, tc.gogc, tc.memlimit, got, tc.want)
			}
		})
	}
}

func TestPod(t *testing.T) {
	defer debug.SetGCPercent(percent())
	for _, tc := range []struct {
		name       string
		containers int
		gogc       string
		want       int
	}{
		{"a small pod keeps run's target", BigPod, "", RunPercent},
		{"a big pod gets Go's default back", BigPod + 1, "", DefaultPercent},
		{"GOGC set: left alone", 1000, "50", RunPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", "")
			debug.SetGCPercent(RunPercent) // as run leaves it
			Pod(tc.containers)
			if got := percent(); got != tc.want {
				t.Errorf("Pod(%d) with GOGC=%q: GOGC = %d, want %d", tc.containers, tc.gogc, got, tc.want)
			}
		})
	}
}
