package session

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Recording is a run's --record file. Without --record it is nil, and
// every method does nothing.
type Recording struct {
	rec  *record.Recorder // nil without --record (a Recording of Tee's only)
	path string
	said error // the write error Start printed
	// also are recorders that get the same lines (the live page's, --serve).
	also []Teed
}

// Teed is a recording of the run besides --record's: the live page's
// (internal/live.Server). Observe is its engine observer; Recorder is nil
// when there is none (a nil *live.Server).
type Teed interface {
	Recorder() *record.Recorder
	Start(h record.Header, src record.Source, rt render.Runtime, pod string) error
	Observe(steps.Event)
	Finish(report.Summary) error
	Close()
}

// Tee returns a recording that also records into more (those without a
// Recorder are left out): the live page (internal/live) shows the run from
// the lines --record writes. r may be nil (no --record).
func (r *Recording) Tee(more ...Teed) *Recording {
	for _, m := range more {
		if m == nil || m.Recorder() == nil {
			continue
		}
		if r == nil {
			r = &Recording{}
		}
		r.also = append(r.also, m)
	}
	return r
}

// OpenRecording creates the --record file before anything is sent: a
// file that cannot be made, or that is the manifest, is bad usage (exit 2).
func OpenRecording(path, manifestFile string, force bool) (*Recording, error) {
	if path == "" {
		return nil, nil
	}
	if a, err := os.Stat(path); err == nil {
		if b, err := os.Stat(manifestFile); err == nil && os.SameFile(a, b) {
			return nil, Usagef("--record %s: that is the manifest (-f); name another file", path)
		}
	}
	rec, err := record.Create(path, force)
	if err != nil {
		return nil, Usagef("--record %s: %v", path, err)
	}
	return &Recording{rec: rec, path: path}, nil
}

// Begin is what a recording's header needs beyond the engine.
type Begin struct {
	Podstep     string // podstep's version
	Interactive bool
	Output      string
	Flags       *pflag.FlagSet // the command's, every flag with its value
	Node        *node.Node
	Stderr      io.Writer
}

// Start subscribes the recording to eng's events and writes the header
// (record.NewHeader), the start line and the plan.
func (r *Recording) Start(ctx context.Context, c *Conn, b *manifest.Bundle, eng *steps.Engine, in Begin) {
	if r == nil {
		return
	}
	rt := record.Runtime{Endpoint: c.Runtime.Endpoint, ImageEndpoint: c.Client.ImageEndpoint,
		Simulated: c.Runtime.Simulated, Why: c.Runtime.Why}
	rt.Name, rt.Version, rt.APIVersion = record.RuntimeVersion(ctx, c.Runtime.Endpoint)
	h := record.NewHeader(in.Podstep, in.Interactive, in.Output, rt, in.Flags)
	h.Manifest, h.Node = record.ManifestOf(b, eng.Redactor()), record.NodeOf(in.Node, b, eng.Redactor())
	pod := b.Pod.Namespace + "/" + b.Pod.Name
	for _, m := range r.also {
		eng.Subscribe(m.Observe)
		_ = m.Start(h, eng, c.Runtime, pod) // a page that cannot be written to has no one to tell
	}
	if r.rec == nil {
		return
	}
	eng.Subscribe(r.rec.Observe)
	if err := r.rec.Start(h, eng, c.Runtime, pod); err != nil {
		fmt.Fprintf(in.Stderr, "podstep: --record %s: %v\n", r.path, err)
		r.said = err
	}
}

// Finish writes the summary and closes the file; a write error that
// happened on the way is said on stderr (the run's exit code stands).
func (r *Recording) Finish(sum report.Summary, stderr io.Writer) {
	if r == nil {
		return
	}
	for _, m := range r.also {
		_ = m.Finish(sum)
	}
	if r.rec == nil {
		return
	}
	// The recorder's error sticks: one Start said is not said again.
	if err := r.rec.Finish(sum); err != nil && err != r.said {
		fmt.Fprintf(stderr, "podstep: --record %s: %v\n", r.path, err)
	}
}

// Close ends a recording that Finish did not (an error return).
func (r *Recording) Close() {
	if r == nil {
		return
	}
	for _, m := range r.also {
		m.Close()
	}
	if r.rec != nil {
		r.rec.Close()
	}
}

// Discard removes the file of a run that ended before it began (the
// runtime was unreachable): there is nothing to replay.
func (r *Recording) Discard() {
	r.Close()
	if r != nil && r.rec != nil {
		os.Remove(r.path)
	}
}
