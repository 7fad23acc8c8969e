package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
)

// TestOutputValuesCovered: every command with -o has its values for the
// shell's completion.
func TestOutputValuesCovered(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("output") != nil {
			if _, ok := outputValues[strings.TrimPrefix(c.CommandPath(), "podstep ")]; !ok {
				t.Errorf("%s has -o but no completion values", c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}

// TestRoughEdges: what a new user meets (issue 23), each the way a user
// expects: exit code and the message's words.
func TestRoughEdges(t *testing.T) {
	// No well-known socket answers here, whatever the machine runs.
	saved := cri.WellKnownEndpoints
	cri.WellKnownEndpoints = []string{"unix:///nonexistent/podstep-test-wellknown.sock"}
	t.Cleanup(func() { cri.WellKnownEndpoints = saved })
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", "")
	hello := "../../testdata/pods/hello.yaml"
	// A root dir that cannot be made (below a file: as root, permissions
	// would not stop it), as a HOME a non-root user cannot write.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr []string
		stdout []string
	}{
		{"info without a runtime", []string{"info"}, ExitRuntime, []string{"no runtime reachable", "--sim"}, nil},
		{"info --sim", []string{"info", "--sim"}, 0, nil, []string{"SIMULATED"}},
		{"--sim with -r", []string{"run", "--auto", "--sim", "-r", "unix:///nope.sock", "-f", hello}, ExitUsage,
			[]string{"--sim and --runtime-endpoint unix:///nope.sock conflict"}, nil},
		{"a misspelt flag", []string{"run", "--auot", "-f", hello}, ExitUsage, []string{"unknown flag: --auot", "Did you mean this?\n\t--auto"}, nil},
		{"a misspelt global flag", []string{"run", "--root-dri", "x", "-f", hello}, ExitUsage, []string{"Did you mean this?\n\t--root-dir"}, nil},
		{"--break completed", []string{"__complete", "run", "--break", "sandbox,c"}, 0, nil, []string{"sandbox,containers\nsandbox,create/*\n:6"}},
		{"--break completes step names", []string{"__complete", "run", "--break", "start"}, 0, nil, []string{"start/*\nstartup/*\n:6"}},
		// -o completes the command's own values
		{"-o completed on run", []string{"__complete", "run", "-o", ""}, 0, nil, []string{"text\nshort\njson\n:4"}},
		{"-o completed on plan", []string{"__complete", "plan", "-o", "j"}, 0, nil, []string{"json\n:4"}},
		{"-o completed on scenarios", []string{"__complete", "scenarios", "-o", ""}, 0, nil, []string{"text\njson\n:4"}},
		{"-o completed on proxy", []string{"__complete", "proxy", "--output", "s"}, 0, nil, []string{"short\n:4"}},
		// proxy picks --auto when stdout is not a terminal, as run does: it
		// goes on to the upstream (unreachable here: exit 3), not exit 2.
		{"proxy -o json to a file", []string{"proxy", "-o", "json", "--listen", "unix:///nonexistent/podstep-l.sock", "--upstream", "unix:///nonexistent/podstep-u.sock"},
			ExitRuntime, []string{"stdout is not a terminal: running as --auto", "runtime unreachable"}, nil},
		{"an unwritable root dir", []string{"run", "--auto", "--sim", "-f", hello, "--root-dir", filepath.Join(file, "state")}, ExitUsage,
			[]string{"--root-dir " + filepath.Join(file, "state") + ": cannot make it", "name a directory you can write with --root-dir"}, nil},
		{"--sim with --image-endpoint", []string{"plan", "--sim", "--image-endpoint", "unix:///nope.sock", "-f", hello}, ExitUsage,
			[]string{"--sim and --image-endpoint"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q lacks %q", out, w)
				}
			}
		})
	}
}

// TestNotReadyWord: a pod whose readiness probe has not passed ends with a
// word that says so and that --wait-ready waits for it, in text and JSON
// (it ended READY 0/1 STATUS Running, exit 0, silently); with --wait-ready
// the probe passes and nothing is said.
func TestNotReadyWord(t *testing.T) {
	pod := "testdata/readiness.yaml"
	for _, tc := range []struct {
		name string
		args []string
		want []string
		not  string
	}{
		{"text", []string{"-q"}, []string{"not ready: READY 0/1: the readiness probe of container web has not passed yet", "--wait-ready"}, ""},
		{"json", []string{"-o", "json"}, []string{`"not_ready":{"containers":["web"],"waited":false,"message":"the readiness probe of container web has not passed yet`}, ""},
		{"--wait-ready", []string{"-q", "--wait-ready"}, nil, "not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, logs := dirs(t)
			code, out, errOut := run(t, append([]string{"run", "--auto", "--sim", "--no-color", "--grace-period", "0", "-f", pod, "--root-dir", root, "--log-dir", logs}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.not != "" && strings.Contains(out, tc.not) {
				t.Errorf("output says %q:\n%s", tc.not, out)
			}
		})
	}
}
