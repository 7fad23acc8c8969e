package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/trace"
)

// Env is what `podstep proxy` runs in: the endpoint flags, podstep's
// version, the standard streams, whether stdout is a terminal, and the TUI
// that shows one followed pod (cmd hands it in: watch is the proxy's
// engine and imports no frontend).
type Env struct {
	Endpoints session.Endpoints
	Version   string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	Terminal  bool
	// Flags are the command's flags, named in a recording's header.
	Flags *pflag.FlagSet
	TUI   func(ctx context.Context, p *Pod, rt render.Runtime) error
}

// Run is `podstep proxy`: the flags' checks, the upstream, the session, the
// server, then --auto (until a signal or the server's end) or the TUI over
// the followed pod; the exit error as every command's (session's codes).
func (o *Flags) Run(ctx context.Context, env Env) error {
	if !o.Auto && !env.Terminal { // as run does
		fmt.Fprintln(env.Stderr, "podstep: stdout is not a terminal: running as --auto")
		o.Auto = true
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := session.SignalContext(ctx)
	defer cancel()
	if err := o.CSI.resolve(ctx); err != nil {
		return err
	}
	signal.Ignore(syscall.SIGPIPE)

	// Tracing is resolved before anything listens: a bad endpoint is bad usage.
	cfg, err := o.Trace.Resolve(nil)
	if err != nil {
		return session.Usagef("%v", err)
	}
	upstream, why, err := o.ChooseUpstream(ctx, env.Endpoints)
	if err != nil {
		return err
	}
	x, err := trace.SetupServer(ctx, cfg, env.Version)
	if err != nil {
		return session.Usagef("%v", err)
	}
	// The CSI drivers' sockets are taken over last before the session
	// starts, and put back on every way out (a kill leaves a marker for
	// podstep cleanup).
	if err := o.CSI.takeOver(env.Stderr); err != nil {
		return err
	}
	defer o.CSI.restore(env.Stderr)
	s, err := o.NewSession(ctx, upstream, why, env.Version, env.Flags, env.Stdout, env.Stderr)
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
	fmt.Fprintf(env.Stderr, "podstep: proxy at %s → runtime %s (%s), following %s\n", o.Listen, upstream, why, follow)
	if x != nil {
		fmt.Fprintf(env.Stderr, "podstep: a span per CRI call to %s (%s)\n", x.Config().URL, x.Config().Protocol)
	}
	err = o.wait(ctx, env, s, served)
	s.Close(func() {
		o.CSI.restore(env.Stderr) // the kubelet's next CSI calls go to the drivers
		srv.GracefulStop(time.Second)
	})
	if x != nil {
		spans.End()
		if x.Shutdown(ctx, env.Stderr) {
			fmt.Fprintf(env.Stderr, "podstep: %d spans of CRI calls exported to %s\n", spans.Spans(), x.Config().URL)
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

// wait waits: in --auto for a signal (reading releases from stdin with
// --hold) or the server's end; else for the followed pod, then shows it in
// the TUI until the user quits or a signal comes.
func (o *Flags) wait(ctx context.Context, env Env, s *Session, served <-chan error) error {
	if o.Auto {
		if o.Hold {
			go s.ReadReleases(ctx, env.Stdin)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		}
	}
	fmt.Fprintf(env.Stderr, "podstep: waiting for the kubelet to create pod %s ...\n", o.Pod)
	var p *Pod
	select {
	case <-ctx.Done():
		return nil
	case p = <-s.Pods:
	}
	if err := env.TUI(ctx, p, s.Runtime()); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
