package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/tui"
)

// runOptions are the flags of `podstep run`: the run's (session.RunFlags)
// and the live page's.
type runOptions struct {
	session.RunFlags
	serve live.Flags // --serve: the live page (internal/live)
	image imageconfig.Flags
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
			o.Tracing.Close(cmd.Context(), err, cmd.ErrOrStderr())
			return err
		},
	}
	f := cmd.Flags()
	o.AddPodFlags(f, time.Second)
	o.AddClusterFlags(f)
	o.AddRunFlags(f)
	f.BoolVar(&o.Auto, "auto", false, "run every step without stopping (for CI and scripts)")
	f.BoolVar(&o.Keep, "keep", false, "leave the pod running at the end (remove it later with podstep cleanup)")
	f.StringVarP(&o.Output, "output", "o", report.Text, "output of --auto: text (each step, what it changed in the pod, its kubelet events), short (one line per step) or json")
	f.BoolVar(&o.JSONFullPod, "json-full-pod", false, "with -o json: the whole pod on every step line (\"pod\", as kubectl get -w -o json prints each change), instead of what the step changed (\"pod_delta\"; the whole pod on the first step and now and then): quadratic in the containers")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "one line per step, without what it changed or its events: -o short")
	f.BoolVar(&o.Predict, "predict", false, "before each step, ask what comes next (multiple choice, answers from stdin), then say right or wrong and why; a score at the end (in the TUI on a terminal, else as --auto)")
	f.StringVar(&o.Record, "record", "", "record the run into this file for podstep replay (FILE.gz: compressed)")
	o.Trace.AddFlags(f)
	o.serve.AddFlags(f)
	o.image.AddFlags(f)
	addShadowFlag(f, &o.RunFlags)
	return cmd
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

// runPod is `podstep run`: the flags into session.RunFlags.Run, with the
// live page and the TUI (internal/tui, one keypress per step) handed in.
func runPod(cmd *cobra.Command, g *globalOptions, o *runOptions) error {
	o.CgroupDriverSet, o.Changed = cmd.Flags().Changed("cgroup-driver"), cmd.Flags().Changed
	g.dirsInto(&o.Options)
	o.Stderr = cmd.ErrOrStderr()
	stdin, stdout := cmd.InOrStdin(), cmd.OutOrStdout()
	ep := g.ep
	var err error
	if ep.ImageConfig, err = o.image.Fetcher(cmd.Flags().Changed("image-config")); err != nil {
		return session.Usagef("%v", err)
	}
	var page *live.Server // --serve's, once started: the TUI shows its URL
	return o.Run(cmd.Context(), session.RunEnv{
		Endpoints: ep, Version: podstepVersion(), Stdin: stdin, Stdout: stdout, Stderr: cmd.ErrOrStderr(),
		Terminal: isTerminal(stdout), StdinTerminal: isTerminalIn(stdin), Force: forceFlag(cmd), Flags: cmd.Flags(),
		Page: func(w io.Writer) (session.Teed, error) {
			s, err := o.serve.Start(w)
			page = s
			return s, err
		},
		NoColor: noColor,
		TUI: func(ctx context.Context, eng *steps.Engine, rt render.Runtime) (session.TUIResult, error) {
			res, err := tui.Run(ctx, eng, tui.Options{
				Runtime: rt, Breaks: o.BreakStages(), BreakSteps: o.BreakSteps(), Keep: o.Keep, NoColor: g.noColor,
				In: stdin, Out: stdout, Cluster: o.ClusterSource(eng),
				Predict: o.Predict, Scenario: session.ScenarioOf(o.Scenario), ServeURL: page.URL(),
			})
			return session.TUIResult{Teardown: res.Teardown, Interrupted: res.Interrupted, Score: res.Score}, err
		},
	})
}
