package cleanup_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cleanup"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
	"github.com/podstep/podstep/internal/steps"
)

// keep runs the pod in file to the end on c and leaves it there, as
// `podstep run --keep` does, and returns the dirs it left.
func keep(t *testing.T, c *cri.Client, file string) []string {
	t.Helper()
	b, err := manifest.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	e := steps.New(b, c, steps.Options{
		Config:    podcfg.Options{RootDir: filepath.Join(root, "kubelet"), LogDir: filepath.Join(root, "logs"), CgroupDriver: "cgroupfs"},
		Simulated: true,
	})
	for !e.Finished() {
		if err := e.Continue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return e.LeftBehind().Dirs
}

// TestRunRemovesOnlyWhatPodstepMade: Run removes a kept pod's dirs,
// and for sandboxes whose labels and annotations point at directories
// podstep never made (no marker, a uid that climbs out of the root), it
// removes the sandbox but keeps the directories and says so.
func TestRunRemovesOnlyWhatPodstepMade(t *testing.T) {
	c := simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond})
	keptDirs := keep(t, c, filepath.Join("..", "..", "testdata", "pods", "hello.yaml"))
	if len(keptDirs) != 2 {
		t.Fatalf("kept pod dirs = %v", keptDirs)
	}

	// Directories a hostile manifest's labels could point cleanup at.
	base := t.TempDir()
	victimRoot := filepath.Join(base, "root")
	victim := filepath.Join(victimRoot, "pods", "victim")
	victimLogs := filepath.Join(base, "logs", "default_victim_victim")
	target := filepath.Join(base, "target")
	for _, d := range []string{victim, victimLogs, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "precious"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, sb := range []struct{ name, uid, root, logs string }{
		{"victim", "victim", victimRoot, victimLogs},
		{"climber", "../../target", victimRoot, filepath.Join(base, "logs", "..", "target")},
	} {
		_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: sb.name, Namespace: "default", Uid: sb.uid},
			Labels:      map[string]string{mark.ManagedLabel: "true"},
			Annotations: map[string]string{mark.RootDirAnnotation: sb.root, mark.LogDirAnnotation: sb.logs},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}

	done, err := cleanup.Run(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 3 {
		t.Fatalf("cleaned %d sandboxes, want 3", len(done))
	}
	for _, d := range done {
		if d.Err != nil {
			t.Errorf("pod %s: %v", d.Pod, d.Err)
		}
		switch d.Pod {
		case "default/hello":
			if len(d.Dirs) != 2 || len(d.Kept) != 0 {
				t.Errorf("kept pod: removed %v, kept %v; want both dirs removed", d.Dirs, d.Kept)
			}
		default:
			if len(d.Dirs) != 0 || len(d.Kept) != 2 {
				t.Errorf("pod %s: removed %v, kept %v; want both dirs kept", d.Pod, d.Dirs, d.Kept)
			}
			for _, k := range d.Kept {
				if !strings.Contains(k, "marker") && !strings.Contains(k, "cannot name a directory") && !strings.Contains(k, "not a pod log dir") {
					t.Errorf("pod %s: kept %q does not say why", d.Pod, k)
				}
			}
		}
	}
	for _, d := range keptDirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("kept pod's %s not removed (%v)", d, err)
		}
	}
	for _, d := range []string{victim, victimLogs, target} {
		if _, err := os.Stat(filepath.Join(d, "precious")); err != nil {
			t.Errorf("cleanup removed %s, which podstep never made: %v", d, err)
		}
	}
	sbs, _ := c.ListPodSandbox(ctx, nil)
	if len(sbs.GetItems()) != 0 {
		t.Errorf("%d sandboxes left after cleanup", len(sbs.GetItems()))
	}
}
