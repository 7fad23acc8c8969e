package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/bench"
)

// newBenchCmd is `podstep bench`: its flags fill a bench.Command, which
// does the rest.
func newBenchCmd(g *globalOptions) *cobra.Command {
	o := &bench.Command{}
	cmd := &cobra.Command{
		Use:   "bench -f FILE",
		Short: "Create and tear down the pod N times and report per-phase and per-CRI-method percentiles, the kubelet's startup SLIs and podstep's own time",
		Example: `  podstep bench -f testdata/pods/hello.yaml --grace-period 0                 # 20 pods, one at a time
  podstep bench -f pod.yaml --concurrency 8 -o json > base.json              # 8 pods at once, as JSON
  podstep bench -f pod.yaml --scale 1,2,4,8,16                               # the scale curve
  podstep bench -f pod.yaml --compare base.json --threshold 10              # exit 1 on a significant regression`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			o.Run.CgroupDriverSet = fl.Changed("cgroup-driver")
			g.dirsInto(&o.Run)
			o.Flags.ThresholdSet, o.Flags.ConcurrencySet = fl.Changed("threshold"), fl.Changed("concurrency")
			o.ImageGiven = fl.Changed("image-config")
			o.Endpoints = g.ep
			o.Endpoints.SimExe = simServeBinary
			o.Stdin, o.Stdout, o.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			return o.Execute(cmd.Context())
		},
	}
	// The relist step watches for exits after the last start: it is not
	// pod creation, and it would add its second to every pod: --settle 0.
	f := cmd.Flags()
	o.Run.AddPodFlags(f, 0)
	f.IntVarP(&o.Flags.N, "count", "n", 20, "pods measured (per concurrency level)")
	f.IntVar(&o.Flags.Warmup, "warmup", 2, "pods run first and not measured (per level): the runtime's caches and connections warm up")
	f.IntVar(&o.Flags.Concurrency, "concurrency", 1, "pods in creation at once, as the kubelet's parallel pod workers")
	f.StringVar(&o.Flags.Scale, "scale", "", "a scale curve: run the pods at each of these concurrencies, e.g. 1,2,4,8,16")
	f.StringVarP(&o.Output, "output", "o", "text", "text or json (the JSON schema is in the README)")
	f.StringVar(&o.Flags.Compare, "compare", "", "a baseline (the JSON of an earlier bench): print the change per phase with a Mann-Whitney U test; exit 1 on a regression")
	f.Float64Var(&o.Flags.Threshold, "threshold", 10, "with --compare: a significant slow-down of a median by more than this percentage is a regression")
	f.DurationVar(&o.Flags.MinChange, "min-change", time.Millisecond, "with --compare: a slow-down smaller than this is never a regression (sub-millisecond phases are noise)")
	f.Int64Var(&o.Run.GracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.DurationVar(&o.Run.PollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs")
	f.DurationVar(&o.Run.InitTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.DurationVar(&o.Run.ReadyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	o.Image.AddFlags(f)
	o.Run.MaxRestarts, o.Run.BackoffScale = 0, 1
	return cmd
}
