package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
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
	return cmd
}

// validate checks the flags before anything listens or is dialled.
func (o *proxyOptions) validate() error {
	if o.listen == "" {
		return usageErr("--listen is required: the socket the kubelet will use as its --container-runtime-endpoint")
	}
	if _, err := cri.Target(o.listen); err != nil {
		return usageErr("--listen: %v", err)
	}
	if o.output != report.Text && o.output != report.Short && o.output != report.JSON {
		return usageErr("-o/--output %q: expected text, short or json", o.output)
	}
	if o.quiet {
		if o.output == report.JSON {
			return usageErr("--quiet is -o short, the short text form: it does not go with -o json")
		}
		o.output = report.Short
	}
	if o.pod != "" {
		ns, name, ok := strings.Cut(o.pod, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return usageErr("--pod %q: expected NAMESPACE/NAME, e.g. default/web", o.pod)
		}
	}
	for _, s := range o.holdStages {
		if _, ok := steps.ParseStage(s); !ok {
			return usageErr("--hold-stage %q: expected one of %s", s, stageNames())
		}
	}
	if len(o.holdStages) > 0 && !o.hold {
		return usageErr("--hold-stage needs --hold")
	}
	if o.requestTimeout <= 0 {
		return usageErr("--request-timeout %s: expected a duration > 0 (the kubelet's runtimeRequestTimeout, 2m by default)", o.requestTimeout)
	}
	return nil
}

// upstreamOf picks the runtime as `run` does: --upstream, --runtime-endpoint,
// CONTAINER_RUNTIME_ENDPOINT, then the first well-known socket that answers.
// There is no simulated fallback: a proxy in front of nothing is a mistake.
func (o *proxyOptions) upstreamOf(ctx context.Context, g *globalOptions) (endpoint, why string, err error) {
	for _, c := range []struct{ ep, why string }{
		{o.upstream, "--upstream"}, {g.runtimeEndpoint, "--runtime-endpoint"},
		{os.Getenv("CONTAINER_RUNTIME_ENDPOINT"), "CONTAINER_RUNTIME_ENDPOINT"},
	} {
		if c.ep == "" {
			continue
		}
		if _, err := cri.Target(c.ep); err != nil {
			return "", "", usageErr("%s: %v", c.why, err)
		}
		if sameSocket(c.ep, o.listen) {
			return "", "", usageErr("%s %s is --listen: the proxy would call itself", c.why, c.ep)
		}
		if err := cri.Probe(ctx, c.ep, probeTimeout(g)); err != nil {
			return "", "", runtimeErr(fmt.Errorf("runtime unreachable at %s (from %s): %v", c.ep, c.why, cri.Message(err)))
		}
		return c.ep, c.why, nil
	}
	for _, ep := range cri.WellKnownEndpoints {
		if !sameSocket(ep, o.listen) && cri.Probe(ctx, ep, time.Second) == nil {
			return ep, "well-known socket", nil
		}
	}
	return "", "", runtimeErr(fmt.Errorf("no runtime to forward to: give --upstream (none answered at %s)", strings.Join(trimUnix(cri.WellKnownEndpoints), ", ")))
}

func sameSocket(a, b string) bool {
	ta, err1 := cri.Target(a)
	tb, err2 := cri.Target(b)
	return err1 == nil && err2 == nil && ta == tb
}

// proxySession is one `podstep proxy` run: the watcher, its frontends and
// the recording.
type proxySession struct {
	cmd      *cobra.Command
	o        *proxyOptions
	rt       render.Runtime
	stdout   io.Writer
	stderr   io.Writer
	hold     *watch.Hold
	w        *watch.Watcher
	rec      *record.Recorder
	recPod   *watch.Pod
	mu       sync.Mutex
	printers map[*watch.Pod]*report.Printer
	pods     chan *watch.Pod // followed pods, for the TUI

	rtName, rtVersion, rtAPI string // the runtime's Version answer (--record)
}

func runProxy(cmd *cobra.Command, g *globalOptions, o *proxyOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	interactive := !o.auto
	if interactive {
		if o.pod == "" {
			return usageErr("the TUI follows one pod: give --pod NAMESPACE/NAME, or --auto")
		}
		if f, ok := safe.Raw(stdout).(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
			return usageErr("the TUI needs a terminal: use --auto")
		}
	}
	ctx, cancel := signalContext(cmd.Context())
	defer cancel()
	signal.Ignore(syscall.SIGPIPE)

	// Tracing is resolved before anything listens: a bad endpoint is bad usage.
	cfg, err := o.trace.Resolve(nil)
	if err != nil {
		return usageErr("%v", err)
	}
	upstream, why, err := o.upstreamOf(ctx, g)
	if err != nil {
		return err
	}
	x, err := trace.SetupServer(ctx, cfg, version)
	if err != nil {
		return usageErr("%v", err)
	}
	s := &proxySession{cmd: cmd, o: o, stdout: stdout, stderr: stderr, printers: map[*watch.Pod]*report.Printer{},
		pods: make(chan *watch.Pod, 1),
		rt:   render.Runtime{Endpoint: upstream, Why: "a kubelet's calls through podstep proxy at " + o.listen + "; upstream from " + why}}
	if o.record != "" {
		// The runtime as it answers Version, for the recording's header.
		s.rtName, s.rtVersion, s.rtAPI = runtimeVersion(ctx, upstream)
		if s.rec, err = record.Create(o.record, forceFlag(s.cmd)); err != nil {
			return usageErr("--record %s: %v", o.record, err)
		}
	}
	if o.hold {
		var stages []steps.Stage
		for _, n := range o.holdStages {
			st, _ := steps.ParseStage(n)
			stages = append(stages, st)
		}
		s.hold = watch.NewHold(watch.HoldOptions{Stages: stages, RequestTimeout: o.requestTimeout,
			Holding: s.holding, AutoReleased: s.autoReleased})
	}
	s.w = watch.New(watch.Options{Follow: o.pod, Hold: s.hold, OnPod: s.onPod})
	hooks := s.w.Hooks()
	arrived, first := hooks.Arrived, sync.Once{}
	hooks.Arrived = func(c *proxy.Call) {
		first.Do(func() { fmt.Fprintf(stderr, "podstep: first call through the proxy: %s\n", c.Name()) })
		arrived(c)
	}
	spans := x.Proxy(s.callOf, s.w.ErrorMessage)
	hooks.Span = spans.Hook()
	srv, err := proxy.New(upstream, hooks)
	if err != nil {
		return runtimeErr(err)
	}
	l, err := proxy.Listen(o.listen)
	if err != nil {
		return usageErr("--listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	follow := "every pod"
	if o.pod != "" {
		follow = "pod " + o.pod
	}
	fmt.Fprintf(stderr, "podstep: proxy at %s → runtime %s (%s), following %s\n", o.listen, upstream, why, follow)
	if x != nil {
		fmt.Fprintf(stderr, "podstep: a span per CRI call to %s (%s)\n", x.Config().URL, x.Config().Protocol)
	}

	if interactive {
		err = s.runTUI(ctx, g)
	} else {
		if o.hold {
			go s.readReleases(ctx, cmd.InOrStdin())
		}
		select {
		case <-ctx.Done():
		case err = <-served:
		}
	}
	// Nothing stays held: the kubelet's calls go on before podstep leaves.
	if s.hold != nil {
		s.hold.Close()
	}
	srv.GracefulStop(time.Second)
	s.w.Close()
	s.finish()
	if x != nil {
		spans.End()
		if x.Shutdown(ctx, stderr) {
			fmt.Fprintf(stderr, "podstep: %d spans of CRI calls exported to %s\n", spans.Spans(), x.Config().URL)
		}
	}
	if err != nil {
		return runtimeErr(fmt.Errorf("proxy: %w", err))
	}
	if signalled() {
		return silentExit(ExitInterrupted) // 128+N (exit.go)
	}
	return nil
}

// callOf is what the watcher made of a call, for its span.
func (s *proxySession) callOf(seq uint64) (trace.ProxyCall, bool) {
	a, ok := s.w.Attribution(seq)
	return trace.ProxyCall{Namespace: a.Namespace, Name: a.Name, UID: a.UID, Container: a.Container,
		Step: a.Step, Stage: string(a.Stage)}, ok
}

// onPod starts showing (and maybe recording) a followed pod.
func (s *proxySession) onPod(p *watch.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.o.auto {
		select {
		case s.pods <- p:
		default:
		}
	} else {
		pr := report.New(s.stdout, s.o.output)
		pr.Start(s.rt, p.Key())
		p.Subscribe(pr.Observe)
		s.printers[p] = pr
	}
	if s.rec != nil && s.recPod == nil {
		s.recPod = p
		host, _ := os.Hostname()
		h := record.Header{Podstep: version, Host: host, OS: runtime.GOOS + "/" + runtime.GOARCH,
			Interactive: !s.o.auto, Output: s.o.output, Flags: map[string]string{},
			Runtime: record.Runtime{Endpoint: s.rt.Endpoint, Why: s.rt.Why,
				Name: s.rtName, Version: s.rtVersion, APIVersion: s.rtAPI},
			Manifest: record.Manifest{File: "(a kubelet's pod, seen through podstep proxy)", Pod: p.Pod()}}
		s.cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				h.Flags[f.Name] = f.Value.String()
			}
		})
		if err := s.rec.Start(h, p, s.rt, p.Key()); err != nil {
			fmt.Fprintf(s.stderr, "podstep: --record %s: %v\n", s.o.record, err)
		}
		p.Subscribe(s.rec.Observe)
	}
}

// finish prints each followed pod's summary and the node-level polling,
// and ends the recording.
func (s *proxySession) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	polling := s.w.Polling()
	for _, p := range s.w.Pods() {
		sum := p.Summary()
		if pr := s.printers[p]; pr != nil {
			pr.Finish(sum)
		}
		if p == s.recPod {
			if err := s.rec.Finish(sum); err != nil {
				fmt.Fprintf(s.stderr, "podstep: --record %s: %v\n", s.o.record, err)
			}
		}
	}
	if s.rec != nil && s.recPod == nil {
		s.rec.Close()
		fmt.Fprintf(s.stderr, "podstep: --record %s: no pod was seen; the file is empty\n", s.o.record)
	}
	if s.o.auto {
		if s.o.output == report.JSON {
			b := jsonLine(map[string]any{"type": "polling", "calls": polling})
			s.stdout.Write(b)
		} else {
			fmt.Fprintf(s.stdout, "node-level polling (not shown step by step): %s\n", orNone(watch.FormatPolling(polling)))
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// holding says, in --auto, that a call is held and how to let it go.
func (s *proxySession) holding(h watch.Held) {
	if !s.o.auto {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.output == report.JSON {
		s.stdout.Write(jsonLine(map[string]any{"type": "held", "pod": h.Pod.Key(), "method": h.Call.Name(), "step": h.Step,
			"stage": h.Stage, "deadline": h.Deadline, "release_at": h.ReleaseAt}))
		return
	}
	fmt.Fprintf(s.stdout, "%s %s (step %s, stage %s) of %s: the kubelet gives up in %s; podstep lets it go by itself in %s. Enter: let it go, c: continue\n",
		color.New(color.FgYellow, color.Bold).Sprint("held:"), h.Call.Name(), h.Step, h.Stage, h.Pod.Key(),
		time.Until(h.Deadline).Round(time.Second), time.Until(h.ReleaseAt).Round(time.Second))
}

// autoReleased warns that a held call went by itself.
func (s *proxySession) autoReleased(h watch.Held) {
	fmt.Fprintf(s.stderr, "podstep: warning: let %s of %s go by itself %s before the kubelet's deadline (it would have timed out)\n",
		h.Call.Name(), h.Pod.Key(), time.Until(h.Deadline).Round(time.Second))
}

// readReleases lets held calls go from stdin lines in --auto: an empty
// line (or n) the oldest, c all of them and the rest of their stage.
func (s *proxySession) readReleases(ctx context.Context, in io.Reader) {
	sc := bufio.NewScanner(in)
	for sc.Scan() && ctx.Err() == nil {
		switch strings.TrimSpace(sc.Text()) {
		case "", "n":
			s.hold.Release()
		case "c":
			s.hold.Continue()
		}
	}
}

// runTUI waits for the followed pod, then shows it in the TUI until the
// user quits or a signal comes.
func (s *proxySession) runTUI(ctx context.Context, g *globalOptions) error {
	fmt.Fprintf(s.stderr, "podstep: waiting for the kubelet to create pod %s ...\n", s.o.pod)
	var p *watch.Pod
	select {
	case <-ctx.Done():
		return nil
	case p = <-s.pods:
	}
	// No Breaks: the hold has the --hold-stage stages already (the TUI's
	// b toggles them there, through the pod's ToggleBreakStage).
	_, err := tui.Run(ctx, p, tui.Options{Runtime: s.rt, Keep: true, NoColor: g.noColor,
		In: s.cmd.InOrStdin(), Out: s.stdout})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// jsonLine is v as one JSON line.
func jsonLine(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	return append(b, '\n')
}

var _ tui.Live = (*watch.Pod)(nil)
