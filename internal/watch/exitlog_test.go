package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/sim"
)

// enospc is what dd wrote as its last log line when the harness's
// container filled its 64 MiB disk (TestExplainReal/cases/no-space-left),
// in the CRI log format containerd's shim writes.
const enospc = "2026-11-30T00:00:00.000000000Z stderr F dd: error writing '/fill': No space left on device\n"

// TestExitExplainedFromLog: a container that exits non-zero fails the
// step whose ContainerStatus showed it, and the explanation reads the end
// of its log (the program's own words) as `podstep run` does: a full disk
// is no-space-left, not the generic container-exited-error. The log is
// read bounded and without following a link out of the pod's log
// directory; an exit after the kubelet's StopContainer is no failure.
func TestExitExplainedFromLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// log writes the container's log file path (the runtime made it).
		log  func(t *testing.T, path string)
		stop bool // the kubelet stops the container before it exits
		// teardown: the kubelet stops the sandbox right after the relist
		// that saw the exit (a Failed pod, as podstep run's), before that
		// relist's step closes.
		teardown bool
		// stopSandbox: the kubelet stops the sandbox while the container
		// runs (it exits 137); killOther: it killed another container of
		// the pod before (a liveness kill), which says nothing of this one.
		stopSandbox, killOther bool
		want                   string // the explanation's id; "" no failed step
		warn                   string // a warning of the failed step
	}{
		{name: "enospc", want: "no-space-left", log: func(t *testing.T, path string) { appendFile(t, path, enospc) }},
		{name: "enospc-then-teardown", want: "no-space-left", teardown: true, log: func(t *testing.T, path string) { appendFile(t, path, enospc) }},
		{name: "enospc-cut-line-first", want: "no-space-left", log: func(t *testing.T, path string) {
			appendFile(t, path, strings.Repeat("x", 3*exitLogBytes)+"\n"+enospc)
		}},
		// Only the last lines count: an old ENOSPC the program got past.
		{name: "enospc-long-ago", want: "container-exited-error", log: func(t *testing.T, path string) {
			appendFile(t, path, enospc+strings.Repeat("2026-11-30T00:00:01.000000000Z stdout F working\n", exitLogLines))
		}},
		{name: "no-log-words", want: "container-exited-error", log: func(t *testing.T, path string) {
			appendFile(t, path, "2026-11-30T00:00:00.000000000Z stderr F bad config\n")
		}},
		// A log that is a link to a file outside the pod's log dir (the
		// proxy is root): not followed.
		{name: "symlink-out", want: "container-exited-error", warn: "not followed", log: func(t *testing.T, path string) {
			outside := filepath.Join(t.TempDir(), "secret.log")
			appendFile(t, outside, enospc)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "fifo", want: "container-exited-error", warn: "not a regular file", log: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "stopped", stop: true, log: func(t *testing.T, path string) { appendFile(t, path, enospc) }},
		{name: "sandbox-stopped", stopSandbox: true, log: func(t *testing.T, path string) { appendFile(t, path, enospc) }},
		{name: "after-kill-of-another", killOther: true, want: "no-space-left", log: func(t *testing.T, path string) { appendFile(t, path, enospc) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{})
			ctx := context.Background()
			cfg := sandboxConfig("full", "uid-"+tc.name)
			cfg.LogDirectory = t.TempDir()
			cfg.Annotations = map[string]string{sim.AnnotationExitCode + "app": "1", sim.AnnotationKeepRunning + "old": "true"}
			if tc.stop || tc.stopSandbox {
				// It runs until StopContainer (StopPodSandbox), which ends it 137.
				cfg.Annotations = map[string]string{sim.AnnotationKeepRunning + "app": "true"}
			}
			k := newKubelet(t, r.client, cfg)
			k.sandbox(ctx)
			if tc.killOther {
				k.container(ctx, "old", nil, "sleep", "3600")
				_, err := k.c.StopContainer(ctx, k.ids["old"], 0)
				k.must(err)
			}
			k.container(ctx, "app", nil, "dd", "if=/dev/zero", "of=/fill", "bs=1M")
			tc.log(t, filepath.Join(cfg.LogDirectory, "app", "0.log"))
			if tc.stop {
				_, err := k.c.StopContainer(ctx, k.ids["app"], 0)
				k.must(err)
			}
			if tc.stopSandbox {
				_, err := k.c.StopPodSandbox(ctx, k.sb)
				k.must(err)
			}
			waitExited(t, k, "app")
			k.relist(ctx)
			if tc.teardown {
				_, err := k.c.StopPodSandbox(ctx, k.sb)
				k.must(err)
			}
			r.settle()
			p := r.w.Pods()[0]
			failed, ok := p.Failed()
			if tc.want == "" {
				if ok {
					t.Fatalf("step %s failed (%s: %s), want none: the exit is the kill's", failed.Name, failed.Result.Reason, failed.Result.Message)
				}
				return
			}
			if !ok {
				t.Fatalf("no failed step: %q", names(p.Steps()))
			}
			if x := failed.Result.Explanation; x == nil || x.ID != tc.want {
				t.Errorf("step %s (%s: %s): explanation %+v, want %s", failed.Name, failed.Result.Reason, failed.Result.Message, x, tc.want)
			}
			if want := `container "app" exited with code 1 (Error)`; failed.Result.Message != want {
				t.Errorf("message %q, want %q", failed.Result.Message, want)
			}
			if w := strings.Join(failed.Result.Warnings, "\n"); !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want one saying %q", w, tc.warn)
			}
		})
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// waitExited waits for the simulator's container to exit (it decides the
// exit at start; ContainerStatus applies it).
func waitExited(t *testing.T, k *kubelet, name string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st, err := k.c.ContainerStatus(context.Background(), k.ids[name])
		k.must(err)
		if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			return
		}
	}
	t.Fatalf("%s did not exit", name)
}
