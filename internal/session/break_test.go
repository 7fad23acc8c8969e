package session

import (
	"strings"
	"testing"
)

// TestCheckBreak: --break takes a stage or a step name (the container
// part a glob), as the TUI's b breaks on a stage or a step.
func TestCheckBreak(t *testing.T) {
	for _, tc := range []struct {
		value string
		err   string // "" accepted
	}{
		{"sandbox", ""},
		{"teardown", ""},
		{"start/hello", ""},
		{"create/*", ""},
		{"pull", ""},
		{"relist", ""},
		{"nosuchstage", "expected a stage"},
		{"start/", "expected a container name or a glob"},
		{"start/[", "expected a container name or a glob"},
		{"relist/app", "is not a container's"},
		{"begin/app", "expected a stage"},
	} {
		err := checkBreak(tc.value)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("--break %s: %v, want accepted", tc.value, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--break %s: %v, want %q", tc.value, err, tc.err)
		}
	}
	o := Options{Breaks: []string{"sandbox", "start/hello", "create/*"}}
	if got := o.BreakStages(); len(got) != 1 || got[0] != "sandbox" {
		t.Errorf("BreakStages = %v", got)
	}
	if got := o.BreakSteps(); strings.Join(got, ",") != "start/hello,create/*" {
		t.Errorf("BreakSteps = %v", got)
	}
}

// TestBreakCompletion: the shell completes stages and step kinds.
func TestBreakCompletion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"sta", []string{"start/*", "startup/*"}},
		{"sandbox,cr", []string{"sandbox,create/*"}},
		{"relis", []string{"relist"}},
		{"sandbox,sand", []string{"sandbox,sandbox-status"}},
	} {
		if got := BreakCompletion(tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("BreakCompletion(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
