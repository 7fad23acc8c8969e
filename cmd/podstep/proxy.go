package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
	"github.com/podstep/podstep/internal/tui"
	"github.com/podstep/podstep/internal/watch"
)

var (
	_ tui.Engine    = (*watch.Pod)(nil)
	_ record.Source = (*watch.Pod)(nil)
)

// proxyOptions are the flags of `podstep proxy`.
type proxyOptions struct {
	listen         string
	upstream       string
	auto           bool
	output         string
	quiet          bool
	pod            string
	record         string
	hold           bool
	holdStages     []string
	requestTimeout time.Duration
	trace          trace.Options
	socket         socketOptions
	maxPods        int
}

func newProxyCmd(g *globalOptions) *cobra.Command {
	o := &proxyOptions{}
	cmd := &cobra.Command{
		Use:   "proxy --listen ENDPOINT [--upstream ENDPOINT]",
		Short: "Watch a real kubelet: a CRI proxy that shows its calls as podstep's steps (and can hold them)",
		Long: `podstep proxy listens on a CRI socket and forwards every call, as bytes, to the
runtime behind it: point a kubelet's --container-runtime-endpoint at it (restarting the
kubelet) and podstep shows each call as the step of pod creation it belongs to, with the
pod's state rebuilt from the answers. --hold keeps the followed pod's calls until a keypress.`,
		Example: `  podstep proxy --listen unix:///run/podstep/cri.sock --upstream unix:///run/containerd/containerd.sock --auto
  podstep proxy --listen unix:///run/podstep/cri.sock --pod default/web --record web.rec.gz --auto -o json
  podstep proxy --listen unix:///run/podstep/cri.sock --pod default/web --hold --hold-stage sandbox,init`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxy(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "", "the CRI endpoint to serve (unix:///path or tcp://host:port): the kubelet's --container-runtime-endpoint")
	f.StringVar(&o.upstream, "upstream", "", "the runtime's CRI endpoint (default: --runtime-endpoint, CONTAINER_RUNTIME_ENDPOINT, then the well-known sockets)")
	f.BoolVar(&o.auto, "auto", false, "print steps as they happen instead of the TUI (for CI and scripts)")
	f.StringVarP(&o.output, "output", "o", report.Text, "output of --auto: text, short or json (the step and call objects of podstep run -o json)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "one line per step: -o short")
	f.StringVar(&o.pod, "pod", "", "follow only this pod (NAMESPACE/NAME); the others pass untouched and unshown")
	f.StringVar(&o.record, "record", "", "record the followed pod (--pod; else the first pod seen) into this file for podstep replay (FILE.gz: compressed)")
	f.BoolVar(&o.hold, "hold", false, "hold each call of the followed pod before it goes to the runtime, until released (TUI: n; --auto: a line on stdin, c to continue)")
	f.StringSliceVar(&o.holdStages, "hold-stage", nil, "with --hold, hold only the calls of these stages (e.g. sandbox,init)")
	f.DurationVar(&o.requestTimeout, "request-timeout", 2*time.Minute, "the kubelet's runtimeRequestTimeout: a held call that carries no deadline is let go shortly before this")
	o.trace.AddFlags(f)
	o.socket.addFlags(f)
	f.IntVar(&o.maxPods, "max-pods", watch.DefaultMaxPods, "how many removed pods podstep remembers; past it the oldest is forgotten (its summary printed, its recording ended)")
	return cmd
}

// validate checks the flags before anything listens or is dialled.
func (o *proxyOptions) validate() error {
	if o.listen == "" {
		return session.Usagef("--listen is required: the socket the kubelet will use as its --container-runtime-endpoint")
	}
	if _, err := cri.Target(o.listen); err != nil {
		return session.Usagef("--listen: %v", err)
	}
	if err := session.CheckOutput(o.output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if o.quiet {
		if o.output == report.JSON {
			return session.Usagef("--quiet is -o short, the short text form: it does not go with -o json")
		}
		o.output = report.Short
	}
	if o.pod != "" {
		ns, name, ok := strings.Cut(o.pod, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return session.Usagef("--pod %q: expected NAMESPACE/NAME, e.g. default/web", o.pod)
		}
	}
	for _, s := range o.holdStages {
		if _, ok := steps.ParseStage(s); !ok {
			return session.Usagef("--hold-stage %q: expected one of %s", s, session.StageNames())
		}
	}
	if len(o.holdStages) > 0 && !o.hold {
		return session.Usagef("--hold-stage needs --hold")
	}
	if o.requestTimeout <= 0 {
		return session.Usagef("--request-timeout %s: expected a duration > 0 (the kubelet's runtimeRequestTimeout, 2m by default)", o.requestTimeout)
	}
	if !o.auto && o.pod == "" {
		return session.Usagef("the TUI follows one pod: give --pod NAMESPACE/NAME, or --auto")
	}
	if o.maxPods < 1 || o.maxPods > 100000 {
		return session.Usagef("--max-pods %d: expected 1 to 100000 (removed pods remembered)", o.maxPods)
	}
	return o.socket.validate(o.listen)
}

// upstreamOf picks the runtime as `run` does (session.Choose): --upstream,
// --runtime-endpoint, CONTAINER_RUNTIME_ENDPOINT, then the first well-known
// socket that answers, never --listen. There is no simulated fallback: a
// proxy in front of nothing is a mistake.
func (o *proxyOptions) upstreamOf(ctx context.Context, g *globalOptions) (endpoint, why string, err error) {
	endpoint, why, err = session.Choose(ctx, g.ep.Named(session.Named{Endpoint: o.upstream, Why: "--upstream"}), o.listen, g.ep.ProbeTimeout())
	if err == nil && endpoint == "" {
		err = session.RuntimeErr(fmt.Errorf("no runtime to forward to: give --upstream (none answered at %s)", session.WellKnown()))
	}
	return endpoint, why, err
}

// runProxy is `podstep proxy`: the flags, the upstream, the session
// (watch.Session), the server, then the TUI or --auto until a signal.
func runProxy(cmd *cobra.Command, g *globalOptions, o *proxyOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f, ok := safe.Raw(stdout).(*os.File); !o.auto && (!ok || !isatty.IsTerminal(f.Fd())) {
		return session.Usagef("the TUI needs a terminal: use --auto")
	}
	ctx, cancel := session.SignalContext(cmd.Context())
	defer cancel()
	signal.Ignore(syscall.SIGPIPE)

	// Tracing is resolved before anything listens: a bad endpoint is bad usage.
	cfg, err := o.trace.Resolve(nil)
	if err != nil {
		return session.Usagef("%v", err)
	}
	upstream, why, err := o.upstreamOf(ctx, g)
	if err != nil {
		return err
	}
	x, err := trace.SetupServer(ctx, cfg, version)
	if err != nil {
		return session.Usagef("%v", err)
	}
	s, err := o.session(ctx, cmd, upstream, why)
	if err != nil {
		return err
	}
	srv, spans, served, err := o.listenAndServe(s, upstream, x)
	if err != nil {
		return err
	}
	follow := "every pod"
	if o.pod != "" {
		follow = "pod " + o.pod
	}
	fmt.Fprintf(stderr, "podstep: proxy at %s → runtime %s (%s), following %s\n", o.listen, upstream, why, follow)
	if x != nil {
		fmt.Fprintf(stderr, "podstep: a span per CRI call to %s (%s)\n", x.Config().URL, x.Config().Protocol)
	}
	err = o.serve(ctx, cmd, g, s, served)
	s.Close(func() { srv.GracefulStop(time.Second) })
	if x != nil {
		spans.End()
		if x.Shutdown(ctx, stderr) {
			fmt.Fprintf(stderr, "podstep: %d spans of CRI calls exported to %s\n", spans.Spans(), x.Config().URL)
		}
	}
	if err != nil {
		return session.RuntimeErr(fmt.Errorf("proxy: %w", err))
	}
	if session.Signalled() {
		return session.Silent(session.ExitInterrupted) // 128+N of the signal
	}
	return nil
}

// listenAndServe starts the proxy to upstream on --listen, its calls
// watched by s and traced by x.
func (o *proxyOptions) listenAndServe(s *watch.Session, upstream string, x *trace.Exporter) (*proxy.Server, *trace.Proxy, <-chan error, error) {
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
	l, err := o.socket.listen.Listen(o.listen)
	if err != nil {
		return nil, nil, nil, session.Usagef("--listen: %v", err)
	}
	o.socket.warn(s.Stderr(), o.listen)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return srv, spans, served, nil
}

// session makes the proxy's watch.Session, and its recording with --record.
func (o *proxyOptions) session(ctx context.Context, cmd *cobra.Command, upstream, why string) (*watch.Session, error) {
	so := watch.SessionOptions{Follow: o.pod, Auto: o.auto, Output: o.output, Hold: o.hold,
		HoldStages: session.ParseStages(o.holdStages), RequestTimeout: o.requestTimeout,
		Runtime:    render.Runtime{Endpoint: upstream, Why: "a kubelet's calls through podstep proxy at " + o.listen + "; upstream from " + why},
		RecordPath: o.record, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), MaxPods: o.maxPods}
	if o.record != "" {
		// The runtime as it answers Version, for the recording's header.
		rt := record.Runtime{Endpoint: so.Runtime.Endpoint, Why: so.Runtime.Why}
		rt.Name, rt.Version, rt.APIVersion = record.RuntimeVersion(ctx, upstream)
		so.Header = record.NewHeader(version, !o.auto, o.output, rt, cmd.Flags())
		var err error
		if so.Recorder, err = record.Create(o.record, forceFlag(cmd)); err != nil {
			return nil, session.Usagef("--record %s: %v", o.record, err)
		}
	}
	return watch.NewSession(so), nil
}

// serve waits: in --auto for a signal (reading releases from stdin with
// --hold) or the server's end; else for the followed pod, then shows it in
// the TUI until the user quits or a signal comes.
func (o *proxyOptions) serve(ctx context.Context, cmd *cobra.Command, g *globalOptions, s *watch.Session, served <-chan error) error {
	if o.auto {
		if o.hold {
			go s.ReadReleases(ctx, cmd.InOrStdin())
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "podstep: waiting for the kubelet to create pod %s ...\n", o.pod)
	var p *watch.Pod
	select {
	case <-ctx.Done():
		return nil
	case p = <-s.Pods:
	}
	// No Breaks: the hold has the --hold-stage stages already (the TUI's
	// b toggles them there, through the pod's ToggleBreakStage).
	_, err := tui.Run(ctx, p, tui.Options{Runtime: s.Runtime(), Keep: true, NoColor: g.noColor,
		In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

var _ tui.Live = (*watch.Pod)(nil)
