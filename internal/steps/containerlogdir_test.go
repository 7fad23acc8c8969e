package steps_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// TestContainerLogDirBeforeCreate: the engine makes a container's log dir
// (<pod log dir>/<container>, 0755) before CreateContainer, as the
// kubelet's generateContainerConfig does (BuildContainerLogsDirectory,
// MkdirAll), so it is there even when the runtime refuses the create; the
// runtime makes only the log file. Before, the simulator made the dir at
// StartContainer, walking the path a component at a time.
func TestContainerLogDirBeforeCreate(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		wantStep         steps.State
	}{
		{"created", "", steps.Done},
		{"create refused", sim.AnnotationCreateError + "c0: boom", steps.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pod.yaml")
			pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: logdir\n  namespace: default\n"
			if tc.annotation != "" {
				pod += "  annotations:\n    " + tc.annotation + "\n"
			}
			pod += "spec:\n  containers:\n  - name: c0\n    image: docker.io/library/busybox:1.35\n    command: [\"sleep\", \"3600\"]\n"
			if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
				t.Fatal(err)
			}
			var logDir string
			r := stepstest.New(t, file, func(o *steps.Options) { logDir = o.Config.LogDir })
			defer func() { _ = r.Engine.Teardown(context.Background()) }()
			ctx := context.Background()
			var create steps.Step
			for create.Name == "" && !r.Engine.Finished() {
				s, err := r.Engine.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range s.Calls {
					if c.Method == "CreateContainer" {
						create = s
					}
				}
			}
			if create.State != tc.wantStep {
				t.Fatalf("the create step is %v, want %v: %s", create.State, tc.wantStep, create.Result.Summary)
			}
			dirs, _ := filepath.Glob(filepath.Join(logDir, "default_logdir_*", "c0"))
			if len(dirs) != 1 {
				t.Fatalf("container log dirs %v under %s, want one: default_logdir_<uid>/c0", dirs, logDir)
			}
			fi, err := os.Stat(dirs[0])
			if err != nil || !fi.IsDir() {
				t.Fatalf("%s: %v, want a dir", dirs[0], err)
			}
			if mode := fi.Mode().Perm() &^ 0o022; mode != 0o755&^0o022 {
				t.Errorf("%s is %v, want 0755 less the umask", dirs[0], fi.Mode().Perm())
			}
		})
	}
}
