package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/sim"
)

// conn is a connected CRI client and how its endpoint was chosen.
type conn struct {
	client *cri.Client
	info   render.Runtime
	stop   func()
}

// connect picks the runtime as crictl does: --runtime-endpoint, then
// CONTAINER_RUNTIME_ENDPOINT, then the well-known sockets; with none
// answering, the built-in simulated runtime. An endpoint the user named
// must answer, or it is exit code 3.
func connect(ctx context.Context, g *globalOptions) (*conn, error) {
	opts := cri.Options{Timeout: g.timeout, PullTimeout: g.pullTimeout}
	imageEP := g.imageEndpoint
	if imageEP == "" {
		imageEP = os.Getenv("IMAGE_SERVICE_ENDPOINT")
	}
	if g.sim {
		return startSim(opts, "--sim")
	}
	endpoint, why := g.runtimeEndpoint, "--runtime-endpoint"
	if endpoint == "" {
		endpoint, why = os.Getenv("CONTAINER_RUNTIME_ENDPOINT"), "CONTAINER_RUNTIME_ENDPOINT"
	}
	if endpoint != "" {
		if _, err := cri.Target(endpoint); err != nil {
			return nil, usageErr("%s: %v", why, err)
		}
		if err := cri.Probe(ctx, endpoint, probeTimeout(g)); err != nil {
			return nil, runtimeErr(fmt.Errorf("runtime unreachable at %s (from %s): %v", endpoint, why, cri.Message(err)))
		}
		return dialed(endpoint, imageEP, opts, why)
	}
	for _, ep := range cri.WellKnownEndpoints {
		if cri.Probe(ctx, ep, time.Second) == nil {
			return dialed(ep, imageEP, opts, "well-known socket")
		}
	}
	return startSim(opts, "no runtime answered at "+strings.Join(trimUnix(cri.WellKnownEndpoints), ", "))
}

func probeTimeout(g *globalOptions) time.Duration {
	if g.timeout > 0 && g.timeout < 5*time.Second {
		return g.timeout
	}
	return 5 * time.Second
}

func trimUnix(eps []string) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = strings.TrimPrefix(e, "unix://")
	}
	return out
}

func dialed(endpoint, imageEP string, opts cri.Options, why string) (*conn, error) {
	c, err := cri.Dial(endpoint, imageEP, opts)
	if err != nil {
		return nil, runtimeErr(err)
	}
	return &conn{client: c, info: render.Runtime{Endpoint: endpoint, Why: why}, stop: func() { c.Close() }}, nil
}

// startSim starts the built-in simulated runtime on a socket in a new temp dir.
func startSim(opts cri.Options, why string) (*conn, error) {
	dir, err := os.MkdirTemp("", "podstep-sim-")
	if err != nil {
		return nil, runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
	}
	srv, err := sim.Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
	}
	c, err := cri.Dial(srv.Endpoint(), "", opts)
	if err != nil {
		srv.Stop()
		os.RemoveAll(dir)
		return nil, runtimeErr(err)
	}
	return &conn{client: c, info: render.Runtime{Endpoint: srv.Endpoint(), Simulated: true, Why: why},
		stop: func() { c.Close(); srv.Stop(); os.RemoveAll(dir) }}, nil
}
