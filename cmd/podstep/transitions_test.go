package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAutoTransitionsGolden runs the scenarios of a crash loop and of a
// failing postStart hook on the simulated runtime and compares the --auto
// text with golden files: under each step, what it changed in the pod
// (STATUS, READY, RESTARTS, conditions, container states) and the kubelet
// events it recorded (BackOff, FailedPostStartHook, Killing). The hello and
// init pods' are TestAutoGolden's auto-hello.text and auto-init.text.
func TestAutoTransitionsGolden(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		events     []string // lines the text must hold (a golden -update would lose them unseen)
	}{
		{"crashloop", "internal/scenario/data/crashloop.yaml", []string{
			"pod: STATUS Running → Error · READY 1/1 → 0/1",
			"pod: RESTARTS 0 → 1 · app: restarts 0 → 1",
			"pod: STATUS Error → CrashLoopBackOff · app: terminated Error (exit 2) → waiting CrashLoopBackOff",
			"Warning   BackOff   pod/crashloop   Back-off restarting failed container app",
		}},
		{"poststart-fails", "internal/scenario/data/poststart-fails.yaml", []string{
			"pod: STATUS Running → PostStartHookError · READY 1/1 → 0/1",
			"Warning   FailedPostStartHook   pod/poststart-fails   PostStartHook failed\n" +
				"       Normal    Killing               pod/poststart-fails   FailedPostStartHook\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, logs := dirs(t)
			code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "--grace-period", "0",
				"--max-restarts", "2", "--backoff-scale", "0.001",
				"-f", "../../"+tc.file, "--root-dir", root, "--log-dir", logs)
			if code != ExitPodFailed {
				t.Fatalf("exit %d, want 1 (CrashLoopBackOff): %s\n%s", code, errOut, out)
			}
			for _, l := range tc.events {
				if !strings.Contains(out, l) {
					t.Errorf("the text lacks %q", l)
				}
			}
			// How many relists saw each exit, so how many calls, depends on timing.
			got := regexp.MustCompile(`\d+ CRI calls`).ReplaceAllString(normalize(out, root, logs), "<n> CRI calls")
			checkGolden(t, "auto-"+tc.name+".text", got)
			assertEmpty(t, filepath.Join(root, "pods"))
		})
	}
}

// TestShortOutput: -o short, and --quiet, keep one line per step: no
// changes, no events; a warning the kubelet also recorded as an event is
// printed as a warning line. replay -o short prints a recording so (what
// replay printed before). --quiet with -o json is a usage error.
func TestShortOutput(t *testing.T) {
	for _, flag := range [][]string{{"-o", "short"}, {"--quiet"}, {"-q"}} {
		t.Run(strings.Join(flag, " "), func(t *testing.T) {
			root, logs := dirs(t)
			args := append([]string{"run", "--auto", "--sim", "--no-color", "--grace-period", "0",
				"-f", "../../testdata/pods/hello.yaml", "--root-dir", root, "--log-dir", logs}, flag...)
			code, out, errOut := run(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			checkGolden(t, "auto-hello.short", normalize(out, root, logs))
		})
	}
	// A replay, too: the hello recording as the run printed it before steps
	// had their changes and events under them.
	code, out, errOut := run(t, "replay", "../../testdata/recordings/hello.v1.rec", "--auto", "-o", "short", "--no-color")
	if code != ExitOK {
		t.Fatalf("replay -o short: exit %d: %s", code, errOut)
	}
	checkGolden(t, "replay-hello.short", out)
	code, _, errOut = run(t, "run", "--auto", "--sim", "-q", "-o", "json", "-f", "../../testdata/pods/hello.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "--quiet") {
		t.Errorf("--quiet -o json: exit %d, stderr %q; want 2 and an error naming --quiet", code, errOut)
	}
}
