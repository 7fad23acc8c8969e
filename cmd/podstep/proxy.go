package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/trace"
	"github.com/podstep/podstep/internal/tui"
	"github.com/podstep/podstep/internal/watch"
)

var (
	_ tui.Engine    = (*watch.Pod)(nil)
	_ record.Source = (*watch.Pod)(nil)
)

func newProxyCmd(g *globalOptions) *cobra.Command {
	o := &watch.Flags{}
	serve := &live.Flags{}
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
			page, err := serve.Start(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer page.Close()
			if page != nil {
				o.Page = page
			}
			return runProxy(cmd, g, o)
		},
	}
	o.AddFlags(cmd.Flags())
	serve.AddFlags(cmd.Flags())
	return cmd
}

// runProxy is `podstep proxy`: the flags, the upstream, the session
// (watch.Session), the server, then the TUI or --auto until a signal.
func runProxy(cmd *cobra.Command, g *globalOptions, o *watch.Flags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if !o.Auto && !isTerminal(stdout) { // as run does
		fmt.Fprintln(stderr, "podstep: stdout is not a terminal: running as --auto")
		o.Auto = true
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := session.SignalContext(cmd.Context())
	defer cancel()
	signal.Ignore(syscall.SIGPIPE)

	// Tracing is resolved before anything listens: a bad endpoint is bad usage.
	cfg, err := o.Trace.Resolve(nil)
	if err != nil {
		return session.Usagef("%v", err)
	}
	upstream, why, err := o.ChooseUpstream(ctx, g.ep)
	if err != nil {
		return err
	}
	x, err := trace.SetupServer(ctx, cfg, version)
	if err != nil {
		return session.Usagef("%v", err)
	}
	o.Force = forceFlag(cmd)
	s, err := o.NewSession(ctx, upstream, why, version, cmd.Flags(), stdout, stderr)
	if err != nil {
		return err
	}
	srv, spans, served, err := o.ListenAndServe(s, upstream, x)
	if err != nil {
		return err
	}
	follow := "every pod"
	if o.Pod != "" {
		follow = "pod " + o.Pod
	}
	fmt.Fprintf(stderr, "podstep: proxy at %s → runtime %s (%s), following %s\n", o.Listen, upstream, why, follow)
	if x != nil {
		fmt.Fprintf(stderr, "podstep: a span per CRI call to %s (%s)\n", x.Config().URL, x.Config().Protocol)
	}
	err = serve(ctx, cmd, g, o, s, served)
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

// serve waits: in --auto for a signal (reading releases from stdin with
// --hold) or the server's end; else for the followed pod, then shows it in
// the TUI until the user quits or a signal comes.
func serve(ctx context.Context, cmd *cobra.Command, g *globalOptions, o *watch.Flags, s *watch.Session, served <-chan error) error {
	if o.Auto {
		if o.Hold {
			go s.ReadReleases(ctx, cmd.InOrStdin())
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "podstep: waiting for the kubelet to create pod %s ...\n", o.Pod)
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
