package steps

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/reason"
)

// TestPodDirHeldBy: a second run of a pod whose dir exists says who holds
// it: a podstep process still running (its PID, command and since when),
// one that has ended (kept or left behind, and how to remove it), or
// nothing podstep recorded. It never claims "an earlier run" for a run
// that is still going.
func TestPodDirHeldBy(t *testing.T) {
	// A live process other than this one, and one that has ended.
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 25, 23, 8, 1, 0, time.UTC)
	liveHolder := mark.Holder{PID: live.Process.Pid, Cmd: "podstep run -f testdata/pods/init.yaml", Since: since}
	for _, tc := range []struct {
		name   string
		holder *mark.Holder // nil: no marker at all (unless raw)
		raw    string       // a marker's raw content (a half-written one)
		want   []string
		not    string
	}{
		{"a run going on", &liveHolder, "", []string{"in use by another podstep run", "PID " + strconv.Itoa(live.Process.Pid),
			"(podstep run -f testdata/pods/init.yaml)", "since 2026-11-25 23:08:01 UTC"}, "earlier"},
		{"a run that ended", &mark.Holder{PID: dead.Process.Pid, Cmd: "podstep run --keep --sim -f x.yaml", Since: since, Simulated: true},
			"", []string{"left by podstep PID " + strconv.Itoa(dead.Process.Pid), "has ended", "podstep cleanup"}, "in use"},
		{"a PID reused by another process", &mark.Holder{PID: live.Process.Pid, Start: 1, Cmd: "podstep run"},
			"", []string{"has ended"}, "in use"},
		{"a marker without a holder", &mark.Holder{}, "", []string{"kept by an earlier podstep run (or left behind)"}, ""},
		{"no marker", nil, "", []string{"podstep did not record making it"}, ""},
		{"a marker cut short", nil, `{"uid":"x","dir":"/r`, []string{"is being made by another podstep run", "not complete yet"}, "did not record"},
		{"an empty marker", nil, " ", []string{"is being made by another podstep run"}, "did not record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSim(t)
			o := testOptions(t)
			b := load(t, repoFile("testdata/pods/init.yaml"))
			dir := filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))
			if err := os.MkdirAll(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			if tc.holder != nil {
				if err := mark.Dir(dir, string(b.Pod.UID), *tc.holder); err != nil {
					t.Fatal(err)
				}
			}
			if tc.raw != "" {
				if err := os.WriteFile(filepath.Join(dir, mark.File), []byte(tc.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e := runAll(t, b, c, o)
			f, failed := e.Failed()
			if !failed || f.Name != "dirs" || f.Result.Reason != reason.PodAlreadyExists {
				t.Fatalf("failed=%v at %s %s, want dirs PodAlreadyExists", failed, f.Name, f.Result.Reason)
			}
			msg := f.Result.Err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if tc.not != "" && strings.Contains(msg, tc.not) {
				t.Errorf("message %q says %q", msg, tc.not)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("the held pod dir was removed: %v", err)
			}
		})
	}
}

// TestPodDirMarkerNamesThisRun: the marker of a pod dir records the
// process that made it and the runtime, for the next run and for cleanup.
func TestPodDirMarkerNamesThisRun(t *testing.T) {
	o := testOptions(t)
	o.Runtime = "unix:///run/x.sock"
	b := load(t, repoFile("testdata/pods/init.yaml"))
	e := New(b, newSim(t), o)
	for s, ok := e.NextStep(); ok && s.Name != "volumes"; s, ok = e.NextStep() {
		if _, err := e.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = e.Teardown(t.Context()) })
	data, err := os.ReadFile(filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID), mark.File))
	if err != nil {
		t.Fatal(err)
	}
	var h mark.Holder
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	if h.PID != os.Getpid() || !h.Alive() || h.Runtime != o.Runtime || !h.Simulated || h.Since.IsZero() {
		t.Errorf("marker holder = %+v, want this process on %s", h, o.Runtime)
	}
}

// TestSandboxHeldBy: a run whose pod dir is free (another --root-dir) but
// whose pod's sandbox a run still going has on the runtime says which
// process holds it, not "kept by an earlier podstep run".
func TestSandboxHeldBy(t *testing.T) {
	c := newSim(t)
	first := New(load(t, repoFile("testdata/pods/init.yaml")), c, testOptions(t))
	for s, ok := first.NextStep(); ok && s.Stage != StageInit; s, ok = first.NextStep() {
		if _, err := first.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = first.Teardown(t.Context()) })
	second := runAll(t, load(t, repoFile("testdata/pods/init.yaml")), c, testOptions(t))
	f, failed := second.Failed()
	if !failed || f.Result.Reason != reason.PodAlreadyExists {
		t.Fatalf("second run: failed=%v at %s %s, want PodAlreadyExists", failed, f.Name, f.Result.Reason)
	}
	msg := f.Result.Err.Error()
	for _, w := range []string{"in use by another podstep run of this pod", "PID " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "earlier") {
		t.Errorf("message %q says an earlier run", msg)
	}
}

// TestSandboxMadeByAnotherClient: a sandbox with podstep's labels and this
// run's root dir, made by another client (crictl runp with the configs of
// `podstep plan --crictl`), is not "in use by another podstep run: PID N"
// with N this very process (the marker read was this run's own pod dir's).
func TestSandboxMadeByAnotherClient(t *testing.T) {
	c := newSim(t)
	o := testOptions(t)
	b := load(t, repoFile("testdata/pods/init.yaml"))
	_, err := c.RunPodSandbox(t.Context(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: b.Pod.Name, Namespace: b.Pod.Namespace, Uid: string(b.Pod.UID)},
		Labels:      map[string]string{mark.ManagedLabel: "true", "io.kubernetes.pod.uid": string(b.Pod.UID)},
		Annotations: map[string]string{mark.RootDirAnnotation: o.Config.RootDir},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := runAll(t, b, c, o)
	f, failed := e.Failed()
	if !failed || f.Result.Reason != reason.PodAlreadyExists {
		t.Fatalf("run: failed=%v at %s %s, want PodAlreadyExists", failed, f.Name, f.Result.Reason)
	}
	msg := f.Result.Err.Error()
	if strings.Contains(msg, "in use by another podstep run") || strings.Contains(msg, "PID "+strconv.Itoa(os.Getpid())) {
		t.Errorf("message %q names this process as another run", msg)
	}
	if !strings.Contains(msg, "made by another client") || !strings.Contains(msg, "podstep cleanup") {
		t.Errorf("message %q does not say another client made it, and how to remove it", msg)
	}
}
