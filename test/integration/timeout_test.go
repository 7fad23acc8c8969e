//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunUnderTimeout runs `podstep run` under coreutils timeout 12 times,
// the deadlines spread over creation (sandbox, pull, create, start). timeout
// sends SIGTERM to podstep and again to its process group: one interrupt,
// so every run tears its pod down and leaves nothing on the runtime or the
// disk (issue 25: 3 of 12 left containers when the copy counted as a
// second interrupt).
func TestRunUnderTimeout(t *testing.T) {
	e := setup(t)
	timeout, err := exec.LookPath("timeout")
	if err != nil {
		t.Fatal("coreutils timeout is needed: ", err)
	}
	const runs = 12
	interrupted := 0
	for i := range runs {
		after := 150*time.Millisecond + time.Duration(i)*120*time.Millisecond // 0.15 s … 1.47 s
		t.Run(fmt.Sprintf("after %s", after), func(t *testing.T) {
			d := newDirs(t)
			args := []string{"--preserve-status", fmt.Sprintf("%.2f", after.Seconds()), e.bin,
				"run", "--auto", "-o", "json", "-f", e.local("start-interrupt"), "-r", e.endpoint,
				"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}
			cmd := exec.Command(timeout, args...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			kill := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
			_ = cmd.Run() // its exit code is checked below
			kill.Stop()
			r := &result{args: append([]string{"(under timeout)"}, args...), code: cmd.ProcessState.ExitCode(),
				stdout: stdout.String(), stderr: stderr.String()}
			r.parseJSON(t)
			switch r.code {
			case 0, 130, 143: // done before the deadline; interrupted and torn down
			default:
				t.Errorf("exit %d, want 130 (or 0 when done first)\n%s", r.code, r)
			}
			if strings.Contains(r.stderr, "again") || strings.Contains(r.stderr, "abandoned") {
				t.Errorf("timeout's one SIGTERM counted twice:\n%s", r.stderr)
			}
			uid := ""
			if st := r.step("dirs"); st != nil && len(st.Details) > 0 {
				uid = filepath.Base(st.Details[0].Value)
			}
			if uid != "" {
				e.assertNothingLeft(t, d, "default", "start-interrupt", uid)
			} else {
				assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
				if sb := dialCRI(t, e.endpoint).managedSandboxes(t); len(sb) > 0 {
					t.Errorf("%d sandboxes left", len(sb))
				}
			}
			t.Logf("exit %d, %d steps", r.code, len(r.steps))
			if r.code != 0 {
				interrupted++
			}
			if t.Failed() {
				e.settle(t)
			}
		})
	}
	if interrupted < runs/2 {
		t.Errorf("only %d of %d runs were interrupted (the others ended first): the deadlines need to be earlier", interrupted, runs)
	}
}
