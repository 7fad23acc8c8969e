package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/reason"
)

// dirsStep mirrors Kubelet.makePodDataDirs (pkg/kubelet/kubelet_pods.go),
// the first thing SyncPod does for a pod it will run.
type dirsStep struct{}

func (dirsStep) mirrors() string {
	return "Kubelet.SyncPod → makePodDataDirs (pkg/kubelet/kubelet.go, kubelet_pods.go)"
}

func (dirsStep) explain() string {
	return "The kubelet makes the pod's data directory under its root dir, pods/<uid>, with volumes/ (where volume plugins put their data) and plugins/. The rest is made later, when each container's config is made: containers/<name>/ for its termination-message file (GenerateRunContainerOptions), and the etc-hosts file (makeMounts)."
}

func (dirsStep) requests(*Engine) []Request { return nil }

func (dirsStep) run(_ context.Context, e *Engine) Result {
	dirs := []string{e.rt.podDir}
	for _, sub := range []string{"volumes", "plugins"} {
		dirs = append(dirs, filepath.Join(e.rt.podDir, sub))
	}
	if _, err := os.Stat(e.rt.podDir); err == nil {
		// The kubelet's MkdirAll would reuse it, but podstep creates a new
		// pod: a pod dir with this UID belongs to a pod kept by an earlier
		// run (or left behind), and its volumes must not be touched.
		msg := fmt.Sprintf("%s already exists: a pod with uid %s was kept by an earlier podstep run (or left behind); remove it with `podstep cleanup`, or give this pod another name or uid", e.rt.podDir, e.pod.UID)
		return fail(reason.PodAlreadyExists, fmt.Errorf("%s", msg), "the pod's data directory already exists")
	}
	e.mu.Lock()
	e.rt.dirsCreated = true // from here teardown removes the pod dir
	e.mu.Unlock()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fail(reason.FailedMakePodDataDirs, err, fmt.Sprintf("cannot make %s", d))
		}
	}
	// The record that lets `podstep cleanup` remove this dir later.
	if err := mark.Dir(e.rt.podDir, string(e.pod.UID)); err != nil {
		return fail(reason.FailedMakePodDataDirs, err, "cannot record the pod dir for podstep cleanup")
	}
	return ok("made "+e.rt.podDir+"/{volumes,plugins}", kv("pod dir", e.rt.podDir))
}

// makeLogDir makes the pod's log dir, as the runtime's RunPodSandbox would
// (containerd makes it too), and records it, when it did not exist, for
// teardown and `podstep cleanup` to remove.
func (e *Engine) makeLogDir(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		e.mu.Lock()
		e.rt.logDir = dir // from here teardown removes it
		e.mu.Unlock()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if e.rt.logDir == dir {
		return mark.Dir(dir, string(e.pod.UID))
	}
	return nil
}
