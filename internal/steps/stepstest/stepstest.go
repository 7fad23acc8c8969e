// Package stepstest runs a manifest through the step engine on a fresh
// simulated runtime, for the tests of the packages that consume the
// engine's events (record, trace, live). It is imported by tests only.
package stepstest

import (
	"context"
	"path/filepath"
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
