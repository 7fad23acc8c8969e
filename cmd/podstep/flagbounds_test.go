package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagBounds: numeric flags out of range are exit 2 with the range,
// before anything is read or sent (the runtime endpoint does not exist: a
// call would be exit 3); values at the edges pass the check.
func TestFlagBounds(t *testing.T) {
	pod := "../../testdata/pods/hello.yaml"
	r := []string{"-r", nowhere}
	for _, tc := range []struct {
		args []string
		want string // "" : not refused by the bounds (exit 3: the runtime is nowhere)
	}{
		{[]string{"bench", "-f", pod, "-n", "9223372036854775807"}, "-n/--count 9223372036854775807: expected 1 to 100000 pods"},
		{[]string{"bench", "-f", pod, "-n", "1000000000000"}, "-n/--count 1000000000000: expected 1 to 100000 pods"},
		{[]string{"bench", "-f", pod, "-n", "0"}, "-n/--count 0: expected 1 to 100000 pods"},
		{[]string{"bench", "-f", pod, "--warmup", "100001"}, "--warmup 100001: expected 0 to 100000 pods"},
		{[]string{"bench", "-f", pod, "--threshold", "NaN", "--compare", "x.json"}, "--threshold NaN: expected a percentage from 0 to 1e6"},
		{[]string{"bench", "-f", pod, "--threshold", "+Inf", "--compare", "x.json"}, "--threshold +Inf"},
		// bench's --concurrency has its own range, stated once (session.BenchMaxConcurrency):
		// it said 1-10000 (fleet's) for 20000 and 1-110 for 111
		{[]string{"bench", "-f", pod, "--concurrency", "20000"}, "--concurrency 20000: expected a count of pods at once from 1 to 110"},
		{[]string{"bench", "-f", pod, "--concurrency", "111"}, "--concurrency 111: expected a count of pods at once from 1 to 110"},
		{[]string{"bench", "-f", pod, "--poll-interval", "0s"}, "--poll-interval 0s: expected a duration from 1ms to 1h"},
		{[]string{"bench", "-f", pod, "--min-change", "-1ms"}, "--min-change -1ms: expected a duration from 0 to 1h"},
		{[]string{"run", "--auto", "-f", pod, "--timeout", "0s"}, "--timeout 0s: expected a duration from 1ms to 24h"},
		{[]string{"run", "--auto", "-f", pod, "--pull-timeout", "-1s"}, "--pull-timeout -1s"},
		{[]string{"run", "--auto", "-f", pod, "--grace-period", "-2"}, "--grace-period -2: expected -1 (the pod's own) or seconds from 0 to a year"},
		{[]string{"run", "--auto", "-f", pod, "--grace-period", "9223372036854775807"}, "--grace-period 9223372036854775807"},
		{[]string{"run", "--auto", "-f", pod, "--backoff-scale", "NaN"}, "--backoff-scale NaN: expected a factor in (0, 1]"},
		{[]string{"run", "--auto", "-f", pod, "--backoff-scale", "0"}, "--backoff-scale 0"},
		{[]string{"run", "--auto", "-f", pod, "--max-restarts", "-2"}, "--max-restarts -2"},
		{[]string{"run", "--auto", "-f", pod, "--max-pods", "-1"}, "--max-pods -1"},
		{[]string{"run", "--auto", "-f", pod, "--init-timeout", "0s"}, "--init-timeout 0s"},
		{[]string{"run", "--auto", "-f", pod, "--ready-timeout", "8760h"}, "--ready-timeout 8760h0m0s: expected a duration from 1ms to 7 days"},
		{[]string{"run", "--auto", "-f", pod, "--settle", "-1s"}, "--settle -1s"},
		{[]string{"info", "--wait", "-1s"}, "--wait -1s"},
		{[]string{"proxy", "--auto", "--listen", "unix:///nonexistent/p.sock", "--request-timeout", "0s"}, "--request-timeout 0s"},
		{[]string{"proxy", "--auto", "--listen", "unix:///nonexistent/p.sock", "--max-pods", "0"}, "--max-pods 0: expected 1 to 100000"},
		{[]string{"cleanup", "--grace-period", "-3"}, "--grace-period -3"},
		// a value that does not parse says what is expected, not the parser's text
		{[]string{"run", "--auto", "-f", pod, "--timeout", "5"}, `--timeout "5": a duration needs a unit; expected a duration from 1ms to 24h, such as 5s`},
		{[]string{"run", "--auto", "-f", pod, "--timeout", "soon"}, `--timeout "soon": not a duration; expected a duration from 1ms to 24h, written with a unit, such as 30s`},
		{[]string{"run", "--auto", "-f", pod, "--backoff-scale", "fast"}, `--backoff-scale "fast": not a number; expected a factor in (0, 1], e.g. 0.01`},
		{[]string{"run", "--auto", "-f", pod, "--max-restarts", "x"}, `--max-restarts "x": not a whole number; expected -1 (no limit) or a count from 0 to 1000000`},
		// the edges pass the bounds
		{[]string{"run", "--auto", "-f", pod, "--grace-period", "-1", "--backoff-scale", "1", "--max-restarts", "-1", "--settle", "0s", "--timeout", "24h"}, ""},
		{[]string{"bench", "-f", pod, "-n", "100000", "--warmup", "0", "--poll-interval", "1ms"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root, logs := dirs(t)
			args := append(append(append([]string{}, tc.args...), r...), "--root-dir", root, "--log-dir", logs)
			code, _, errOut := run(t, args...)
			if tc.want == "" {
				if code == ExitUsage {
					t.Errorf("refused: %s", errOut)
				}
				return
			}
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
			if _, err := os.Stat(filepath.Join(root, "pods")); err == nil {
				t.Errorf("pod dirs made for a refused flag")
			}
		})
	}
}

// TestInputBounds: inputs that are not what they claim, or too large, are
// one clear error and exit 2, read no further than the bound: diff's
// recordings and traces, bench --compare's baseline.
func TestInputBounds(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(strings.Repeat("y", 65<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "/dev/zero", "/dev/zero"}, "diff: /dev/zero: binary data (a NUL byte in the first 65536 bytes): expected a podstep recording or a kubelet's CRI trace"},
		{[]string{"bench", "--compare", "/dev/zero", "-f", "../../testdata/pods/hello.yaml", "-r", nowhere}, "--compare: /dev/zero: binary data"},
		{[]string{"bench", "--compare", huge, "-f", "../../testdata/pods/hello.yaml", "-r", nowhere}, "--compare: " + huge + ": larger than 64 MiB: expected a podstep bench result (JSON) of at most 64 MiB"},
	} {
		t.Run(tc.args[0]+" "+tc.args[1], func(t *testing.T) {
			code, _, errOut := run(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}
