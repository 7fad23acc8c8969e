package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// Flags are the flags of `podstep proxy` (cmd/podstep binds them with
// AddFlags; docs/cli/podstep_proxy.md), and what they make: the upstream,
// the Session, the served socket.
type Flags struct {
	Listen         string
	Upstream       string
	Auto           bool
	Output         string
	Quiet          bool
	Pod            string
	Record         string
	RecordDir      string
	Hold           bool
	HoldStages     []string
	RequestTimeout time.Duration
	Trace          trace.Options
	Socket         SocketFlags
	MaxPods        int
	// CSI are --csi and --csi-registry: CSI drivers' node sockets the
	// proxy also stands in front of.
	CSI CSIFlags
	// Kubeconfig and Context (--kubeconfig, --context) read each followed
	// pod's spec from the API server, with the kubeconfig found as kubectl
	// and `podstep run --pod` find it (internal/cluster); Manifest
	// (--manifest) from a standalone kubelet's static pod manifests.
	Kubeconfig, Context, Manifest string
	// AllowExecPlugins is --allow-exec-plugins: a kubeconfig's exec
	// credential plugin from a file another user owns or may write runs
	// anyway (internal/cluster).
	AllowExecPlugins bool
	// specs is what Validate made of them (nil: none).
	specs SpecSource
	// Page is the live page (--serve, bound by cmd with live.Flags; nil
	// without): NewSession hands it to the Session.
	Page Page
	// Force is the root's --force: --record may replace what is not a
	// regular file (cmd sets it; AddFlags does not bind it).
	Force bool
}

// AddFlags binds the proxy's flags to f.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Listen, "listen", "", "the CRI endpoint to serve (unix:///path or tcp://host:port): the kubelet's --container-runtime-endpoint")
	f.StringVar(&o.Upstream, "upstream", "", "the runtime's CRI endpoint (default: --runtime-endpoint, CONTAINER_RUNTIME_ENDPOINT, then the well-known sockets)")
	f.BoolVar(&o.Auto, "auto", false, "print steps as they happen instead of the TUI (for CI and scripts)")
	f.StringVarP(&o.Output, "output", "o", report.Text, "output of --auto: text, short or json (the step and call objects of podstep run -o json)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "one line per step: -o short")
	f.StringVar(&o.Pod, "pod", "", "follow only this pod (NAMESPACE/NAME); the others pass untouched and unshown")
	f.StringVar(&o.Record, "record", "", "record the followed pod (--pod; else the first pod seen) into this file for podstep replay (FILE.gz: compressed)")
	f.StringVar(&o.RecordDir, "record-dir", "", "record every followed pod into its own file in this folder (NAMESPACE_NAME_UID.rec.gz, mode 0600), written whole when the kubelet removes the pod's sandbox or the proxy stops")
	f.BoolVar(&o.Hold, "hold", false, "hold each call of the followed pod before it goes to the runtime, until released (TUI: n; --auto: a line on stdin, c to continue)")
	f.StringSliceVar(&o.HoldStages, "hold-stage", nil, "with --hold, hold only the calls of these stages (e.g. sandbox,init)")
	f.DurationVar(&o.RequestTimeout, "request-timeout", 2*time.Minute, "the kubelet's runtimeRequestTimeout: the deadline of a call that carries none (the stuck-at view's, and a held call is let go shortly before it)")
	o.Trace.AddFlags(f)
	o.Socket.addFlags(f)
	o.CSI.addFlags(f)
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "read each followed pod's spec from the API server (one GET per pod), to stage init containers as init and show the spec beside what the kubelet sent: this kubeconfig file, as kubectl's (with --context alone: $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.BoolVar(&o.AllowExecPlugins, session.AllowExecPluginsFlag, false, session.AllowExecPluginsUsage)
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use (default: its current-context); reads the specs from the API server as --kubeconfig does")
	f.StringVar(&o.Manifest, "manifest", "", "read each followed pod's spec from a standalone kubelet's static pod manifests: a FILE, or the DIR of its staticPodPath (parsed as podstep run -f does)")
	f.IntVar(&o.MaxPods, "max-pods", DefaultMaxPods, "how many removed pods podstep remembers; past it the oldest is forgotten (its summary printed, its recording ended)")
}

// Validate checks the flags before anything listens or is dialled.
func (o *Flags) Validate() error {
	if o.Listen == "" {
		return session.Usagef("--listen is required: the socket the kubelet will use as its --container-runtime-endpoint")
	}
	if _, err := cri.Target(o.Listen); err != nil {
		return session.Usagef("--listen: %v", err)
	}
	if err := session.CheckOutput(o.Output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if o.Quiet {
		if o.Output == report.JSON {
			return session.Usagef("--quiet is -o short, the short text form: it does not go with -o json")
		}
		o.Output = report.Short
	}
	if o.Pod != "" {
		ns, name, ok := strings.Cut(o.Pod, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return session.Usagef("--pod %q: expected NAMESPACE/NAME, e.g. default/web", safe.Cut(o.Pod))
		}
	}
	for _, s := range o.HoldStages {
		if _, ok := steps.ParseStage(s); !ok {
			return session.Usagef("--hold-stage %q: expected one of %s", s, session.StageNames())
		}
	}
	if len(o.HoldStages) > 0 && !o.Hold {
		return session.Usagef("--hold-stage needs --hold")
	}
	if o.RequestTimeout <= 0 {
		return session.Usagef("--request-timeout %s: expected a duration > 0 (the kubelet's runtimeRequestTimeout, 2m by default)", o.RequestTimeout)
	}
	if !o.Auto && o.Pod == "" {
		return session.Usagef("the TUI follows one pod: give --pod NAMESPACE/NAME, or --auto")
	}
	if o.Record != "" && o.RecordDir != "" {
		return session.Usagef("--record FILE records one pod, --record-dir DIR every followed pod: give one of them")
	}
	if o.RecordDir != "" {
		if fi, err := os.Stat(o.RecordDir); err != nil || !fi.IsDir() {
			return session.Usagef("--record-dir %s: expected an existing folder", o.RecordDir)
		}
	}
	if o.MaxPods < 1 || o.MaxPods > 100000 {
		return session.Usagef("--max-pods %d: expected 1 to 100000 (removed pods remembered)", o.MaxPods)
	}
	if err := o.Socket.validate(o.Listen); err != nil {
		return err
	}
	if err := o.CSI.validate(o.Listen); err != nil {
		return err
	}
	return o.validateSpecs()
}

// validateSpecs makes the spec source of --kubeconfig/--context or
// --manifest: the kubeconfig is loaded and the manifests parsed, nothing is
// sent.
func (o *Flags) validateSpecs() error {
	api := o.Kubeconfig != "" || o.Context != ""
	switch {
	case api && o.Manifest != "":
		return session.Usagef("--manifest and --kubeconfig/--context both given: the pods' specs come from the API server or from a standalone kubelet's static pod manifests, not both")
	case api:
		c, err := cluster.Connect(cluster.Options{Kubeconfig: o.Kubeconfig, Context: o.Context, AllowExecPlugins: o.AllowExecPlugins})
		if err != nil {
			return session.Usagef("%v", err)
		}
		o.specs = APISpecs{Client: c}
	case o.Manifest != "":
		if err := CheckFileSpecs(o.Manifest); err != nil {
			return session.Usagef("%v", err)
		}
		o.specs = FileSpecs{Path: o.Manifest}
	}
	return nil
}

// ChooseUpstream picks the runtime as `run` does (session.Choose): --upstream,
// --runtime-endpoint, CONTAINER_RUNTIME_ENDPOINT, then the first well-known
// socket that answers, never --listen. There is no simulated fallback: a
// proxy in front of nothing is a mistake.
func (o *Flags) ChooseUpstream(ctx context.Context, ep session.Endpoints) (endpoint, why string, err error) {
	endpoint, why, err = session.Choose(ctx, ep.Named(session.Named{Endpoint: o.Upstream, Why: "--upstream"}), o.Listen, ep.ProbeTimeout())
	if err == nil && endpoint == "" {
		err = session.RuntimeErr(fmt.Errorf("no runtime to forward to: give --upstream (none answered at %s)", session.WellKnown()))
	}
	return endpoint, why, err
}

// NewSession makes the proxy's Session, and its recording with --record
// (its header names podstep's version and the command's flags).
func (o *Flags) NewSession(ctx context.Context, upstream, why, podstep string, flags *pflag.FlagSet, stdout, stderr io.Writer) (*Session, error) {
	so := SessionOptions{Follow: o.Pod, Auto: o.Auto, Output: o.Output, Hold: o.Hold,
		HoldStages: session.ParseStages(o.HoldStages), RequestTimeout: o.RequestTimeout,
		Runtime:    render.Runtime{Endpoint: upstream, Why: "a kubelet's calls through podstep proxy at " + o.Listen + "; upstream from " + why},
		RecordPath: o.Record, RecordDir: o.RecordDir, Stdout: stdout, Stderr: stderr, MaxPods: o.MaxPods, Specs: o.specs, Page: o.Page}
	if o.specs != nil {
		fmt.Fprintf(stderr, "podstep: each followed pod's spec from %s (one read per pod)\n", o.specs)
	}
	if o.Record != "" || o.RecordDir != "" || o.Page != nil {
		// The runtime as it answers Version, for the recording's header.
		rt := record.Runtime{Endpoint: so.Runtime.Endpoint, Why: so.Runtime.Why}
		rt.Name, rt.Version, rt.APIVersion = record.RuntimeVersion(ctx, upstream)
		so.Header = record.NewHeader(podstep, !o.Auto, o.Output, rt, flags)
	}
	if o.Record != "" {
		var err error
		if so.Recorder, err = record.Create(o.Record, o.Force); err != nil {
			return nil, session.Usagef("--record %s: %v", o.Record, err)
		}
	}
	return NewSession(so), nil
}

// ListenAndServe starts the proxy to upstream on --listen, its calls
// watched by s and traced by x.
func (o *Flags) ListenAndServe(s *Session, upstream string, x *trace.Exporter) (*proxy.Server, *trace.Proxy, <-chan error, error) {
	hooks := s.Hooks()
	spans := x.Proxy(func(seq uint64) (trace.ProxyCall, bool) {
		a, ok := s.W.Attribution(seq)
		return trace.ProxyCall{Namespace: a.Namespace, Name: a.Name, UID: a.UID, Container: a.Container,
			Step: a.Step, Stage: string(a.Stage)}, ok
	}, s.W.ErrorMessage)
	hooks.Span = spans.Hook()
	srv, err := proxy.New(upstream, hooks)
	if err != nil {
		return nil, nil, nil, session.RuntimeErr(err)
	}
	l, err := o.Socket.listen.Listen(o.Listen)
	if err != nil {
		return nil, nil, nil, session.Usagef("--listen: %v", err)
	}
	o.Socket.warn(s.Stderr(), o.Listen)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if err := o.CSI.serve(hooks, s.Stderr()); err != nil {
		srv.Stop()
		return nil, nil, nil, err
	}
	return srv, spans, served, nil
}
