//go:build integration

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// stream is runStreaming with extra flags (the later of a repeated flag wins).
func (e *env) stream(t *testing.T, d dirs, file string, extra []string, onStep func(cmd *exec.Cmd, s stepEvent)) *result {
	t.Helper()
	args := append([]string{"run", "--auto", "-o", "json", "-f", file, "-r", e.endpoint,
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
	defer kill.Stop()
	r := &result{args: args}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		n := len(r.steps)
		if err := r.parseLine(sc.Bytes()); err != nil {
			t.Errorf("JSON line %q: %v", sc.Text(), err)
		}
		if len(r.steps) > n {
			onStep(cmd, r.steps[n])
		}
	}
	err = cmd.Wait()
	r.stdout, r.stderr = out.String(), stderr.String()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wait: %v\n%s", err, r)
	}
	return r
}

// TestSecondInterruptAbandonsTeardown: a second SIGINT while teardown waits
// for StopContainer (a 10 s grace period; sleep as PID 1 ignores SIGTERM)
// ends podstep at once with exit 4 and a list of what is left, sandbox,
// container, dirs and tmpfs mount included; `podstep cleanup` then removes
// it all. (The second SIGINT was swallowed: podstep ended ~10 s later.)
//
// The first SIGINT waits for the container's first log line: StartContainer
// answers before runc's init has exec'd the shell, and a SIGTERM in that
// window ends the init (it is no PID 1 that ignores it), so the container
// was stopped and removed before the second SIGINT (once, on containerd 2
// under load: "stderr lacks , container app").
func TestSecondInterruptAbandonsTeardown(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	var second time.Time
	uid := ""
	r := e.stream(t, d, e.local("start-interrupt"), []string{"--grace-period", "10"}, func(cmd *exec.Cmd, s stepEvent) {
		if s.Name == "dirs" && len(s.Details) > 0 {
			uid = filepath.Base(s.Details[0].Value)
		}
		if s.Name == "start/app" && second.IsZero() {
			waitForLine(t, filepath.Join(d.podLogDir("default", "start-interrupt", uid), "app", "0.log"), "started", 10*time.Second)
			if err := interrupt(cmd); err != nil {
				t.Errorf("SIGINT: %v", err)
			}
			time.Sleep(500 * time.Millisecond) // teardown is in StopContainer now
			if err := interrupt(cmd); err != nil {
				t.Errorf("second SIGINT: %v", err)
			}
			second = time.Now()
		}
	})
	took := time.Since(second)
	if second.IsZero() {
		t.Fatalf("the JSON stream never showed step start/app; no SIGINT sent\n%s", r)
	}
	t.Logf("exit %d %s after the second SIGINT", r.code, took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("podstep took %s to exit after the second SIGINT", took.Round(time.Millisecond))
	}
	if r.code != 4 {
		t.Errorf("exit %d, want 4 (something left)\n%s", r.code, r)
	}
	for _, want := range []string{"teardown abandoned; left: sandbox ", ", container app ", ", dir " + d.podDir(uid) + ",",
		", mount " + d.podDir(uid) + "/volumes/kubernetes.io~empty-dir/scratch (tmpfs)", "run `podstep cleanup`"} {
		if !strings.Contains(r.stderr, want) {
			// (the whole run: once, on containerd 2 under load, the container
			// was no longer listed; its steps say how far teardown had come)
			t.Errorf("stderr lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stderr, "torn down") {
		t.Errorf("stderr says torn down:\n%s", r.stderr)
	}
	if len(dialCRI(t, e.endpoint).managedSandboxes(t)) == 0 {
		t.Errorf("no sandbox left: the teardown was not abandoned")
	}
	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "start-interrupt", uid)
}

// waitForLine waits until the file holds a line containing text (a
// container's log: its program has started), at most d; past it the test
// goes on and says so.
func waitForLine(t *testing.T, file, text string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && strings.Contains(string(b), text) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s holds no %q after %s: going on", file, text, d)
}
