package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// recording is a run's --record file. Without --record it is nil, and
// every method does nothing.
type recording struct {
	rec  *record.Recorder
	path string
}

// openRecording creates the --record file before anything is sent: a
// file that cannot be made, or that is the manifest, is bad usage (exit 2).
func openRecording(path, manifestFile string, force bool) (*recording, error) {
	if path == "" {
		return nil, nil
	}
	if a, err := os.Stat(path); err == nil {
		if b, err := os.Stat(manifestFile); err == nil && os.SameFile(a, b) {
			return nil, usageErr("--record %s: that is the manifest (-f); name another file", path)
		}
	}
	rec, err := record.Create(path, force)
	if err != nil {
		return nil, usageErr("--record %s: %v", path, err)
	}
	return &recording{rec: rec, path: path}, nil
}

// subscribe feeds the recording with eng's events.
func (r *recording) subscribe(eng *steps.Engine) {
	if r != nil {
		eng.Subscribe(r.rec.Observe)
	}
}

// start writes the header, the start line and the plan.
func (r *recording) start(ctx context.Context, cmd *cobra.Command, o *runOptions, c *conn, b *manifest.Bundle, eng *steps.Engine, interactive bool) {
	if r == nil {
		return
	}
	host, _ := os.Hostname()
	h := record.Header{Podstep: version, Host: host, OS: runtime.GOOS + "/" + runtime.GOARCH,
		Interactive: interactive, Output: o.output, Flags: map[string]string{},
		Runtime: record.Runtime{Endpoint: c.info.Endpoint, ImageEndpoint: c.client.ImageEndpoint,
			Simulated: c.info.Simulated, Why: c.info.Why},
		Manifest: record.ManifestOf(b, eng.Redactor()), Node: record.NodeOf(o.node, b, eng.Redactor())}
	h.Runtime.Name, h.Runtime.Version, h.Runtime.APIVersion = runtimeVersion(ctx, c.info.Endpoint)
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			h.Flags[f.Name] = f.Value.String()
		}
	})
	if err := r.rec.Start(h, eng, c.info, b.Pod.Namespace+"/"+b.Pod.Name); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "podstep: --record %s: %v\n", r.path, err)
	}
}

// finish writes the summary and closes the file; a write error that
// happened on the way is said on stderr (the run's exit code stands).
func (r *recording) finish(sum report.Summary, stderr io.Writer) {
	if r == nil {
		return
	}
	if err := r.rec.Finish(sum); err != nil {
		fmt.Fprintf(stderr, "podstep: --record %s: %v\n", r.path, err)
	}
}

// close ends a recording that finish did not (an error return).
func (r *recording) close() {
	if r != nil {
		r.rec.Close()
	}
}

// discard removes the file of a run that ended before it began (the
// runtime was unreachable): there is nothing to replay.
func (r *recording) discard() {
	if r != nil {
		r.rec.Close()
		os.Remove(r.path)
	}
}

// runtimeVersion asks the runtime's name and version for the header, on a
// connection of its own, so that the run's calls stay as they are.
func runtimeVersion(ctx context.Context, endpoint string) (name, ver, api string) {
	c, err := cri.Dial(endpoint, "", cri.Options{Timeout: 2 * time.Second})
	if err != nil {
		return "", "", ""
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return "", "", ""
	}
	return v.GetRuntimeName(), v.GetRuntimeVersion(), v.GetRuntimeApiVersion()
}
