package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/rmtree"
	"github.com/podstep/podstep/internal/shadow"
	"github.com/podstep/podstep/internal/sim"
)

// Endpoints are the runtime flags every command that reaches a runtime
// shares.
type Endpoints struct {
	Runtime     string // --runtime-endpoint
	Image       string // --image-endpoint
	Sim         bool   // --sim
	Timeout     time.Duration
	PullTimeout time.Duration
	// SimExe, when set, is the podstep executable whose `sim-serve` runs
	// the simulated runtime in a process of its own (bench: sim.StartProcess);
	// else it runs in podstep's process.
	SimExe func() (string, error)
	// SimFlags are more sim-serve flags for SimExe's runtime (bench: its
	// image config flags, sim.StartProcessWith).
	SimFlags []string
	// SimDirs are the directories, besides the run's sim dir, where the
	// simulated runtime lets requests name log dirs (sim.Options.Dirs):
	// the run's --root-dir and --log-dir when given (Options.SimDirs).
	SimDirs []string
	// ImageConfig reads image configs for the simulated runtime in this
	// process (sim.Options.ImageConfig; nil: none, and always with SimExe).
	ImageConfig *imageconfig.Fetcher
	// NoFallback: no runtime answering is exit 3, not the simulated runtime
	// (podstep info: a health check must not pass on a node without one).
	NoFallback bool
	// Shadow is run's --shadow: a private copy of the node's runtime for
	// the replay (shadow.go).
	Shadow ShadowFlags
}

// Check refuses flags that contradict each other (exit 2): --sim is the
// built-in runtime, so a runtime or image endpoint given with it would be
// silently ignored.
func (e Endpoints) Check() error {
	for _, f := range []struct{ name, value string }{{"--runtime-endpoint", e.Runtime}, {"--image-endpoint", e.Image}} {
		if e.Sim && f.value != "" {
			return Usagef("--sim and %s %s conflict: --sim uses the built-in simulated runtime, %s names a real one; give one of them", f.name, f.value, f.name)
		}
	}
	return nil
}

// Named is an endpoint a user named, and where it came from ("--upstream").
type Named struct{ Endpoint, Why string }

// Conn is a connected CRI client and how its endpoint was chosen.
type Conn struct {
	Client  *cri.Client
	Runtime render.Runtime
	Stop    func()
	// Dir is the run's sim dir on the simulated runtime (SimDirPrefix),
	// "" on a real one.
	Dir string
	// Shadow is the shadow runtime the run is on (nil: none); KeepShadow
	// leaves it running at Stop (--keep).
	Shadow     *shadow.Shadow
	KeepShadow bool
}

// Choose is the one endpoint choice, as crictl's: the first of named that
// is set (it must be valid, not avoid, and answer: else a usage error or
// exit 3), else the first well-known socket that answers (other than
// avoid). Nothing answering is ("", "", nil): the caller decides (run falls
// back to the simulated runtime, the proxy refuses).
func Choose(ctx context.Context, named []Named, avoid string, probe time.Duration) (endpoint, why string, err error) {
	for _, n := range named {
		if n.Endpoint == "" {
			continue
		}
		if _, err := cri.Target(n.Endpoint); err != nil {
			return "", "", Usagef("%s: %v", n.Why, err)
		}
		if avoid != "" && sameSocket(n.Endpoint, avoid) {
			return "", "", Usagef("%s %s is --listen: the proxy would call itself", n.Why, n.Endpoint)
		}
		if err := cri.Probe(ctx, n.Endpoint, probe); err != nil {
			return "", "", RuntimeErr(fmt.Errorf("runtime unreachable at %s (from %s): %v", n.Endpoint, n.Why, cri.Message(err)))
		}
		return n.Endpoint, n.Why, nil
	}
	for _, ep := range cri.WellKnownEndpoints {
		if (avoid == "" || !sameSocket(ep, avoid)) && cri.Probe(ctx, ep, time.Second) == nil {
			return ep, "well-known socket", nil
		}
	}
	return "", "", nil
}

// Named returns the user's endpoints in order: first (a command's own
// flag, e.g. --upstream, if any), --runtime-endpoint, CONTAINER_RUNTIME_ENDPOINT.
func (e Endpoints) Named(first ...Named) []Named {
	return append(first, Named{e.Runtime, "--runtime-endpoint"},
		Named{os.Getenv("CONTAINER_RUNTIME_ENDPOINT"), "CONTAINER_RUNTIME_ENDPOINT"})
}

// ProbeTimeout is how long a named endpoint has to answer: --timeout, at
// most 5 s.
func (e Endpoints) ProbeTimeout() time.Duration {
	if e.Timeout > 0 && e.Timeout < 5*time.Second {
		return e.Timeout
	}
	return 5 * time.Second
}

// WellKnown is the well-known sockets, for messages.
func WellKnown() string {
	out := make([]string, len(cri.WellKnownEndpoints))
	for i, e := range cri.WellKnownEndpoints {
		out[i] = strings.TrimPrefix(e, "unix://")
	}
	return strings.Join(out, ", ")
}

func sameSocket(a, b string) bool {
	ta, err1 := cri.Target(a)
	tb, err2 := cri.Target(b)
	return err1 == nil && err2 == nil && ta == tb
}

// Connect picks the runtime (Choose) and dials it; with --sim, or none
// answering, the built-in simulated runtime. An endpoint the user named
// must answer, or it is exit code 3.
func Connect(ctx context.Context, e Endpoints) (*Conn, error) {
	opts := cri.Options{Timeout: e.Timeout, PullTimeout: e.PullTimeout}
	if e.Sim {
		return e.startSim(opts, "--sim")
	}
	endpoint, why, err := Choose(ctx, e.Named(), "", e.ProbeTimeout())
	if err != nil {
		return nil, err
	}
	if endpoint == "" && e.NoFallback {
		return nil, RuntimeErr(fmt.Errorf("no runtime reachable: none answered at %s (name one with -r or CONTAINER_RUNTIME_ENDPOINT; --sim for the simulated runtime)", WellKnown()))
	}
	if endpoint == "" {
		return e.startSim(opts, "no runtime answered at "+WellKnown())
	}
	imageEP := e.Image
	if imageEP == "" {
		imageEP = os.Getenv("IMAGE_SERVICE_ENDPOINT")
	}
	// A shadow serves both services: the node's image endpoint is not used.
	if sc, err := e.startShadow(ctx, endpoint, why, opts); sc != nil || err != nil {
		return sc, err
	}
	c, err := cri.Dial(endpoint, imageEP, opts)
	if err != nil {
		return nil, RuntimeErr(err)
	}
	return &Conn{Client: c, Runtime: render.Runtime{Endpoint: endpoint, Why: why}, Stop: func() { c.Close() }}, nil
}

// startSim starts the simulated runtime: in a process of its own with
// SimExe, else in this one, on a socket in a new temp dir.
func (e Endpoints) startSim(opts cri.Options, why string) (*Conn, error) {
	dir, err := newSimDir()
	if err != nil {
		return nil, RuntimeErr(err)
	}
	endpoint, stop, err := e.simServer(dir)
	if err != nil {
		_ = rmtree.RemoveAll(dir)
		return nil, RuntimeErr(err)
	}
	c, err := cri.Dial(endpoint, "", opts)
	if err != nil {
		stop()
		_ = rmtree.RemoveAll(dir)
		return nil, RuntimeErr(err)
	}
	return &Conn{Client: c, Runtime: render.Runtime{Endpoint: endpoint, Simulated: true, Why: why}, Dir: dir,
		Stop: func() { c.Close(); stop(); endSimDir(dir) }}, nil
}

// simServer starts the runtime: with SimExe in a child (in a dir of its
// own, which it removes), else in this process on dir/sim.sock; either
// lets requests name paths only in dir and SimDirs.
func (e Endpoints) simServer(dir string) (string, func(), error) {
	if e.SimExe != nil {
		exe, err := e.SimExe()
		if err != nil {
			return "", nil, fmt.Errorf("start simulated runtime: %w", err)
		}
		p, err := sim.StartProcessWith(exe, e.SimFlags, append([]string{dir}, e.SimDirs...)...)
		if err != nil {
			return "", nil, err
		}
		return p.Endpoint, p.Stop, nil
	}
	srv, err := sim.StartWithOptions(dir, sim.Options{Dirs: e.SimDirs, ImageConfig: e.ImageConfig})
	if err != nil {
		return "", nil, fmt.Errorf("start simulated runtime: %w", err)
	}
	return srv.Endpoint(), srv.Stop, nil
}
