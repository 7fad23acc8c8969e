//go:build integration

package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestInterruptDuringStart: SIGINT while StartContainer is in flight, at 12
// delays after the create step is reported (StartContainer takes ~70 ms
// here). Every run must leave nothing (sandbox, container, pod dirs, the
// tmpfs of its memory emptyDir) and say so truthfully: exit 130 and
// "interrupted: torn down". A StartContainer cancelled under containerd
// left its container "in starting state": RemoveContainer refused it and the
// run still claimed "torn down".
func TestInterruptDuringStart(t *testing.T) {
	e := setup(t)
	const runs = 12
	inFlight := 0
	for i := 0; i < runs; i++ {
		delay := time.Duration(i) * 10 * time.Millisecond
		t.Run(fmt.Sprintf("after %s", delay), func(t *testing.T) {
			d := newDirs(t)
			var sent time.Time
			r := e.runStreaming(t, d, e.local("start-interrupt"), func(cmd *exec.Cmd, s stepEvent) {
				if sent.IsZero() && s.Name == "create/app" {
					time.Sleep(delay)
					sent = time.Now()
					if err := interrupt(cmd); err != nil {
						t.Errorf("SIGINT: %v", err)
					}
				}
			})
			if sent.IsZero() {
				t.Fatalf("the JSON stream never showed step create/app; no SIGINT sent\n%s", r)
			}
			if st := r.step("start/app"); st != nil {
				end := st.Started.Add(time.Duration(st.DurationMs * float64(time.Millisecond)))
				if !sent.Before(st.Started) && !sent.After(end) {
					inFlight++
				}
				t.Logf("start/app: %s %s, SIGINT %s after it began", st.State, st.Reason, sent.Sub(st.Started).Round(time.Millisecond))
			}
			e.checkStream(t, r)
			if r.code != 130 || r.summary.Outcome != "interrupted" {
				t.Errorf("exit %d, outcome %q; want 130, interrupted\n%s", r.code, r.summary.Outcome, r)
			}
			if !strings.Contains(r.stderr, "interrupted: torn down") {
				t.Errorf("stderr does not say \"interrupted: torn down\": %q", r.stderr)
			}
			e.assertNothingLeft(t, d, "default", "start-interrupt", r.summary.UID)
			if t.Failed() {
				e.settle(t)
			}
		})
	}
	t.Logf("%d of %d SIGINTs arrived while StartContainer was in flight", inFlight, runs)
	if inFlight == 0 {
		t.Errorf("no SIGINT arrived while StartContainer was in flight: the case was not tested")
	}
}
