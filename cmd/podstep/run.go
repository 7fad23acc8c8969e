package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// runOptions are the flags of `podstep run`: the run's settings
// (session.Options, shared with plan and bench) and how it is shown.
type runOptions struct {
	session.Options
	auto   bool
	keep   bool
	output string
	quiet  bool
	record string
	serve  live.Flags // --serve: the live page (internal/live)
	// predict is --predict: ask before each step (internal/predict); quiz
	// asks, set by runPod.
	predict bool
	quiz    *predict.Quiz

	// trace is --otlp-endpoint and --otlp-protocol (internal/trace); tracing
	// is the run's export, set by runPod (nil: no tracing).
	trace   trace.Options
	tracing *session.Tracing
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run -f FILE | --pod [NAMESPACE/]NAME",
		Short: "Create the pod step by step against a CRI runtime (TUI on a terminal, --auto otherwise)",
		Example: `  podstep run -f testdata/pods/hello.yaml                # interactive, one keypress per step
  podstep run --auto -f testdata/pods/hello.yaml         # all steps, each with what it changed and its events
  podstep run --auto -q -f testdata/pods/hello.yaml      # all steps, one line each
  podstep run --auto -o json -f pod.yaml -r unix:///run/containerd/containerd.sock
  podstep run --auto --pod default/web-7d4b9c-x2k9p      # the cluster's pod, its objects and its node from the API server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runPod(cmd, g, o)
			// The spans end with the run's exit code; at most the exporter's timeout.
			o.tracing.Close(cmd.Context(), err, cmd.ErrOrStderr())
			return err
		},
	}
	f := cmd.Flags()
	o.AddPodFlags(f, time.Second)
	o.AddClusterFlags(f)
	o.AddRunFlags(f)
	f.BoolVar(&o.auto, "auto", false, "run every step without stopping (for CI and scripts)")
	f.BoolVar(&o.keep, "keep", false, "leave the pod running at the end (remove it later with podstep cleanup)")
	f.StringVarP(&o.output, "output", "o", report.Text, "output of --auto: text (each step, what it changed in the pod, its kubelet events), short (one line per step) or json")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "one line per step, without what it changed or its events: -o short")
	f.BoolVar(&o.predict, "predict", false, "before each step, ask what comes next (multiple choice, answers from stdin), then say right or wrong and why; a score at the end (in the TUI on a terminal, else as --auto)")
	f.StringVar(&o.record, "record", "", "record the run into this file for podstep replay (FILE.gz: compressed)")
	o.trace.AddFlags(f)
	o.serve.AddFlags(f)
	return cmd
}

// validate checks flags before anything is read or sent.
func (o *runOptions) validate(cmd *cobra.Command, g *globalOptions) error {
	o.CgroupDriverSet, o.Changed = cmd.Flags().Changed("cgroup-driver"), cmd.Flags().Changed
	g.dirsInto(&o.Options)
	o.Stderr = cmd.ErrOrStderr()
	if err := o.Validate(); err != nil { // the embedded session.Options
		return err
	}
	if err := session.CheckOutput(o.output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if o.predict {
		if o.output == report.JSON || o.File == "-" {
			return session.Usagef("--predict reads answers from stdin and asks on stdout: it goes with -o text or short and a manifest that is not stdin")
		}
		// On a terminal the TUI asks (its predict mode); elsewhere --auto does.
		o.auto = o.auto || !isTerminal(cmd.OutOrStdout())
	}
	if o.quiet {
		if o.output == report.JSON {
			return session.Usagef("--quiet is -o short, the short text form: it does not go with -o json")
		}
		o.output = report.Short
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := safe.Raw(w).(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// isTerminalIn reports whether r is a terminal (a typed answer is echoed by it).
func isTerminalIn(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// runPod is `podstep run`: the flags' checks, the manifest, the recording
// and trace, the runtime, then the pod in the TUI or --auto.
func runPod(cmd *cobra.Command, g *globalOptions, o *runOptions) error {
	if err := o.validate(cmd, g); err != nil {
		return err
	}
	bundle, err := o.LoadManifest(cmd.InOrStdin())
	if err != nil {
		return err
	}
	if o.tracing, err = session.OpenTracing(cmd.Context(), o.trace, version); err != nil {
		return err
	}
	rec, err := session.OpenRecording(o.record, o.File, forceFlag(cmd))
	if err != nil {
		return err
	}
	defer rec.Close()
	page, err := o.serve.Start(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer page.Close()
	rec = rec.Tee(page)
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	interactive := !o.auto && isTerminal(stdout)
	if !o.auto && !interactive {
		fmt.Fprintln(stderr, "podstep: stdout is not a terminal: running as --auto")
	}
	if !isTerminal(stdout) {
		noColor()
	}

	// Signals: the first SIGINT/SIGTERM/SIGHUP (a closed terminal) cancels the
	// run and tears down; a second one abandons teardown (session.Interrupts).
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sig := session.WatchSignals(cancel, stderr)
	defer sig.Stop()

	c, err := session.Connect(ctx, g.ep)
	if err != nil {
		rec.Discard()
		return sig.NotStarted(err)
	}
	defer c.Stop()
	if err := o.UseRuntime(c); err != nil {
		rec.Discard()
		return err
	}
	eng := steps.New(bundle, c.Client, o.Engine(c.Runtime))
	sig.Watch(eng)
	o.tracing.Start(ctx, c, eng)
	begin := session.Begin{Podstep: version, Interactive: interactive, Output: o.output, Flags: cmd.Flags(), Node: o.Node, Stderr: stderr}
	if interactive {
		rec.Start(ctx, c, bundle, eng, begin)
		return runInteractive(ctx, cmd, g, o, eng, c, sig, rec)
	}
	// A reader of stdout that goes away (`| head`) interrupts the run.
	printer := report.New(sig.Stdout(stdout), o.output)
	eng.Subscribe(printer.Observe)
	if o.predict {
		o.quiz = predict.New(predict.Options{In: cmd.InOrStdin(), Out: sig.Stdout(stdout), Echo: !isTerminalIn(cmd.InOrStdin()), Scenario: scenarioOf(o.Scenario)})
	}
	printer.Start(c.Runtime, session.PodName(eng))
	rec.Start(ctx, c, bundle, eng, begin)
	return runAuto(ctx, cmd.Context(), eng, c, sig, o, printer, rec, stderr)
}

// runAuto runs every step, then settles the run (session.Settle).
func runAuto(ctx, parent context.Context, eng *steps.Engine, c *session.Conn, sig *session.Interrupts, o *runOptions,
	printer *report.Printer, rec *session.Recording, stderr io.Writer) error {
	start := time.Now()
	if o.predict {
		if err := predict.Run(ctx, eng, o.quiz, func() string { return eng.PodState().Display }); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	// A reader of stdout that went away (`| head`) stops the run, quietly:
	// torn down, exit 0, as for a reader that read what it wanted.
	wasInterrupted := sig.Interrupted() && !sig.StdoutGone()
	sum := session.Summarize(eng, c.Client.Calls(), time.Since(start), o.keep && !sig.Interrupted())
	code, msg := o.End(parent, eng, &sum, !sum.Kept, wasInterrupted, printer, rec, stderr)
	if code == ExitPodFailed && o.output == report.JSON {
		fmt.Fprintf(stderr, "error: stage %s, step %s: %s: %s\n", sum.Failed.Stage, sum.Failed.Step, sum.Failed.Reason, sum.Failed.Message)
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	return session.Silent(code)
}
