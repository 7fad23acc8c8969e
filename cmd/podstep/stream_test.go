package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// streamed is what stream saw of a podstep process.
type streamed struct {
	lines  []string
	stderr string
	code   int // the exit code (-1: killed by a signal)
}

// stream is the one harness of the streaming tests: it runs the built
// podstep with args, hands each stdout line to onLine (with the process,
// to signal it) as it comes, and waits for the exit. A pipe or start error
// fails t; a process still running after timeout is killed and fails t, so
// that no test hangs. The run's TMPDIR is the test's own: the sim dir of a
// run the test kills on purpose (it stays for `cleanup --sim`) goes with it.
func stream(t *testing.T, timeout time.Duration, onLine func(p *exec.Cmd, line string), args ...string) streamed {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := make(chan struct{})
	timer := time.AfterFunc(timeout, func() { close(killed); _ = cmd.Process.Kill() })
	defer timer.Stop()
	var s streamed
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		s.lines = append(s.lines, sc.Text())
		if onLine != nil {
			onLine(cmd, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading stdout: %v", err)
	}
	err = cmd.Wait()
	s.stderr = stderr.String()
	select {
	case <-killed:
		t.Fatalf("podstep %v still running after %s: killed; stderr:\n%s", args, timeout, s.stderr)
	default:
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		s.code = ee.ExitCode()
	default:
		t.Fatalf("wait: %v", err)
	}
	return s
}
