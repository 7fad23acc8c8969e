package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/bench"
	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/session"
)

// benchOptions are the flags of `podstep bench`.
type benchOptions struct {
	run         session.Options
	image       imageconfig.Flags
	simFlags    []string // the image config flags for the simulated runtime's process
	n           int
	warmup      int
	concurrency int
	scale       string
	output      string
	compare     string
	threshold   float64
	minChange   time.Duration

	levels []int // from --concurrency or --scale
}

func newBenchCmd(g *globalOptions) *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench -f FILE",
		Short: "Create and tear down the pod N times and report per-phase and per-CRI-method percentiles, the kubelet's startup SLIs and podstep's own time",
		Example: `  podstep bench -f testdata/pods/hello.yaml --grace-period 0                 # 20 pods, one at a time
  podstep bench -f pod.yaml --concurrency 8 -o json > base.json              # 8 pods at once, as JSON
  podstep bench -f pod.yaml --scale 1,2,4,8,16                               # the scale curve
  podstep bench -f pod.yaml --compare base.json --threshold 10              # exit 1 on a significant regression`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, g, o)
		},
	}
	// The relist step watches for exits after the last start: it is not
	// pod creation, and it would add its second to every pod: --settle 0.
	f := cmd.Flags()
	o.run.AddPodFlags(f, 0)
	f.IntVarP(&o.n, "count", "n", 20, "pods measured (per concurrency level)")
	f.IntVar(&o.warmup, "warmup", 2, "pods run first and not measured (per level): the runtime's caches and connections warm up")
	f.IntVar(&o.concurrency, "concurrency", 1, "pods in creation at once, as the kubelet's parallel pod workers")
	f.StringVar(&o.scale, "scale", "", "a scale curve: run the pods at each of these concurrencies, e.g. 1,2,4,8,16")
	f.StringVarP(&o.output, "output", "o", "text", "text or json (the JSON schema is in the README)")
	f.StringVar(&o.compare, "compare", "", "a baseline (the JSON of an earlier bench): print the change per phase with a Mann-Whitney U test; exit 1 on a regression")
	f.Float64Var(&o.threshold, "threshold", 10, "with --compare: a significant slow-down of a median by more than this percentage is a regression")
	f.DurationVar(&o.minChange, "min-change", time.Millisecond, "with --compare: a slow-down smaller than this is never a regression (sub-millisecond phases are noise)")
	f.Int64Var(&o.run.GracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.DurationVar(&o.run.PollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs")
	f.DurationVar(&o.run.InitTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.DurationVar(&o.run.ReadyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	o.image.AddFlags(f)
	o.run.MaxRestarts, o.run.BackoffScale = 0, 1
	return cmd
}

// validate checks the flags before anything is read or sent.
func (o *benchOptions) validate(cmd *cobra.Command, g *globalOptions) error {
	o.run.CgroupDriverSet = cmd.Flags().Changed("cgroup-driver")
	g.dirsInto(&o.run)
	if err := o.run.Validate(); err != nil {
		return err
	}
	levels, err := bench.Check(bench.Flags{N: o.n, Warmup: o.warmup, Concurrency: o.concurrency, Scale: o.scale,
		Threshold: o.threshold, MinChange: o.minChange, Compare: o.compare,
		ThresholdSet: cmd.Flags().Changed("threshold"), ConcurrencySet: cmd.Flags().Changed("concurrency")})
	if err != nil {
		return session.Usagef("%v", err)
	}
	o.levels = levels
	if o.simFlags, err = bench.SimFlags(o.image, cmd.Flags().Changed("image-config")); err != nil {
		return session.Usagef("%v", err)
	}
	return session.CheckOutput(o.output, "text", "json")
}

func runBench(cmd *cobra.Command, g *globalOptions, o *benchOptions) error {
	if err := o.validate(cmd, g); err != nil {
		return err
	}
	var base *bench.Result
	if o.compare != "" {
		var err error
		if base, err = bench.ReadBaseline(o.compare); err != nil {
			return session.Usagef("--compare: %v", err)
		}
	}
	bundle, err := o.run.LoadManifest(cmd.InOrStdin())
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sig := session.WatchSignals(cancel, stderr)
	defer sig.Stop()
	// A simulated runtime runs in a process of its own: its work is not
	// podstep's (sim.StartProcess).
	ep := g.ep
	ep.SimExe = simServeBinary
	ep.SimDirs = o.run.SimDirs()
	ep.SimFlags = o.simFlags
	c, err := session.Connect(ctx, ep)
	if err != nil {
		return sig.NotStarted(err)
	}
	defer c.Stop()
	if err := o.run.UseRuntime(c); err != nil {
		return err
	}

	b := bench.NewRunner(ctx, bench.Config{Bundle: bundle, Engine: o.run.Engine(render.Runtime{Endpoint: c.Runtime.Endpoint}), Conn: c,
		N: o.n, Warmup: o.warmup, Levels: o.levels, Stderr: stderr})
	sig.WatchMany(b.LeftBehind)
	if c.Runtime.Simulated && o.output != "text" {
		// The text report says it first; JSON has it as a field, so here once.
		fmt.Fprintln(stderr, "podstep: "+bench.SimulatedNote)
	}
	res := b.Run()
	var cmp *bench.Comparison
	if base != nil && len(res.Levels) > 0 {
		cmp = bench.Compare(base, res, o.threshold, float64(o.minChange.Microseconds())/1000)
	}
	if err := bench.Write(stdout, o.output, res, cmp); err != nil {
		return err
	}
	code := b.ExitCode(sig.Interrupted())
	if code == ExitInterrupted {
		fmt.Fprintf(stderr, "podstep: interrupted: torn down (%d pods measured)\n", bench.Measured(res))
	}
	if code == ExitOK && cmp != nil && cmp.Regressions() > 0 {
		fmt.Fprintf(stderr, "podstep: %d regression(s) against %s\n", cmp.Regressions(), o.compare)
		code = ExitPodFailed
	}
	return session.Silent(code)
}
