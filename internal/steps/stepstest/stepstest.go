// Package stepstest runs a manifest through the step engine on a fresh
// simulated runtime, for the tests of the packages that consume the
// engine's events (record, trace, live). It is imported by tests only.
package stepstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
	"github.com/podstep/podstep/internal/steps"
)

// Run is a loaded manifest, the client of its simulated runtime and an
// engine over both, not started.
type Run struct {
	Bundle *manifest.Bundle
	Client *cri.Client
	Engine *steps.Engine
}

// New loads file and builds an engine for it over a fresh simulated
// runtime (its init containers run 20 ms), with the options these tests
// share: a kubelet root in a temp dir, no grace period, 5 ms polls, a 5 s
// init timeout, 2 restarts at 1/1000 of the kubelet's back-off, 100 ms to
// settle. tune changes them (nil: none). The runtime is gone when the test
// ends.
func New(t testing.TB, file string, tune func(*steps.Options)) Run {
	t.Helper()
	b, err := manifest.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond})
	root := t.TempDir()
	zero := int64(0)
	o := steps.Options{
		Config:       podcfg.Options{RootDir: filepath.Join(root, "kubelet"), LogDir: filepath.Join(root, "logs"), CgroupDriver: "cgroupfs"},
		GracePeriod:  &zero,
		PollInterval: 5 * time.Millisecond,
		Simulated:    true,
		InitTimeout:  5 * time.Second,
		MaxRestarts:  2,
		BackoffScale: 0.001,
		Settle:       100 * time.Millisecond,
	}
	if tune != nil {
		tune(&o)
	}
	return Run{Bundle: b, Client: c, Engine: steps.New(b, c, o)}
}

// Through runs eng's creation to its end, then its teardown; an error of
// either fails the test.
func Through(t testing.TB, eng *steps.Engine) {
	t.Helper()
	ctx := context.Background()
	for !eng.Finished() {
		if err := eng.Continue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
}

// WideManifest writes a pod of n busybox containers (c0 … c<n-1>, each
// sleeping) to a file in dir and returns its path: the pod-size benchmarks
// and tests make theirs (a 1,000-container pod is 70 KB) instead of keeping
// big files in the repository.
func WideManifest(t testing.TB, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wide-%d\n  namespace: default\nspec:\n  containers:\n", n)
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    image: docker.io/library/busybox:1.35\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n", i)
	}
	path := filepath.Join(dir, fmt.Sprintf("wide-%d.yaml", n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
