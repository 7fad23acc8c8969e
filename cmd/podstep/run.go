package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// runOptions are the flags of `podstep run` (and, where shared, `plan`).
type runOptions struct {
	file          string
	auto          bool
	keep          bool
	gracePeriod   int64
	breaks        []string
	output        string
	quiet         bool
	clusterDNS    []string
	clusterDomain string
	cgroupDriver  string
	// cgroupDriverSet: --cgroup-driver was given (else it is the default).
	cgroupDriverSet bool
	featureGates    string     // --feature-gates as given
	gates           gate.Gates // parsed by validate
	cgroupsPerQOS   bool
	pollInterval    time.Duration
	initTimeout     time.Duration
	nodeFile        string
	unsafeSysctls   []string
	maxPods         int64
	maxRestarts     int
	backoffScale    float64
	settle          time.Duration
	waitReady       bool
	readyTimeout    time.Duration
	record          string

	// node is the node chosen for admission (set by runPod from the flags).
	node *node.Node

	// trace is --otlp-endpoint and --otlp-protocol (internal/trace); tracing
	// is the run's export, set by runPod (nil: no tracing).
	trace   trace.Options
	tracing *tracing
}

func addPodFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "pod manifest (multi-document YAML: one Pod plus its Secrets/ConfigMaps/Node); - reads stdin")
	f.StringSliceVar(&o.clusterDNS, "cluster-dns", nil, "kubelet --cluster-dns: DNS server IPs for ClusterFirst pods (none: the host's resolv.conf, as the kubelet falls back)")
	f.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "kubelet --cluster-domain")
	f.StringVar(&o.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver when the runtime does not report one (cgroupfs or systemd)")
	f.StringVar(&o.nodeFile, "node", "", "a v1 Node YAML to admit the pod to (default: the manifest's Node, else this machine)")
	f.StringSliceVar(&o.unsafeSysctls, "allowed-unsafe-sysctls", nil, "kubelet --allowed-unsafe-sysctls (names or patterns ending in *)")
	f.Int64Var(&o.maxPods, "max-pods", 0, "kubelet --max-pods: the node's pod capacity (0: the node's own, else 110)")
	f.DurationVar(&o.settle, "settle", time.Second, "after the last container starts, relist this long to catch containers that exit (the kubelet's PLEG relists every 1s); 0 leaves the relist step out")
	f.BoolVar(&o.waitReady, "wait-ready", false, "add the ready stage: run startup and readiness probes until the pod is Ready (or --ready-timeout)")
	f.StringVar(&o.featureGates, "feature-gates", "", "kubelet --feature-gates: Name=true|false pairs, comma-separated, over v1.37's defaults ("+strings.Join(gate.Names(), ", ")+")")
	f.BoolVar(&o.cgroupsPerQOS, "cgroups-per-qos", false, "kubelet --cgroups-per-qos: put pods under /kubepods/<qos>/pod<uid> (needs the kubepods cgroups to exist)")
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run -f FILE",
		Short: "Create the pod step by step against a CRI runtime (TUI on a terminal, --auto otherwise)",
		Example: `  podstep run -f testdata/pods/hello.yaml                # interactive, one keypress per step
  podstep run --auto -f testdata/pods/hello.yaml         # all steps, each with what it changed and its events
  podstep run --auto -q -f testdata/pods/hello.yaml      # all steps, one line each
  podstep run --auto -o json -f pod.yaml -r unix:///run/containerd/containerd.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runPod(cmd, g, o)
			// The spans end with the run's exit code; at most the exporter's timeout.
			o.tracing.close(cmd.Context(), err, cmd.ErrOrStderr())
			return err
		},
	}
	addPodFlags(cmd, o)
	f := cmd.Flags()
	f.BoolVar(&o.auto, "auto", false, "run every step without stopping (for CI and scripts)")
	f.BoolVar(&o.keep, "keep", false, "leave the pod running at the end (remove it later with podstep cleanup)")
	f.Int64Var(&o.gracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.StringSliceVar(&o.breaks, "break", nil, "stop before these stages in the TUI (e.g. sandbox,containers)")
	f.StringVarP(&o.output, "output", "o", report.Text, "output of --auto: text (each step, what it changed in the pod, its kubelet events), short (one line per step) or json")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "one line per step, without what it changed or its events: -o short")
	f.DurationVar(&o.pollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs (the kubelet's PLEG relists every 1s)")
	f.DurationVar(&o.initTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.IntVar(&o.maxRestarts, "max-restarts", 3, "restarts of one container (the kubelet's CrashLoopBackOff) before podstep gives up; -1: no limit, as the kubelet")
	f.Float64Var(&o.backoffScale, "backoff-scale", 1, "multiply the kubelet's back-off delays (10s doubling to 5m) by this for the time podstep waits, e.g. 0.01 in CI")
	f.DurationVar(&o.readyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	f.StringVar(&o.record, "record", "", "record the run into this file for podstep replay (FILE.gz: compressed)")
	o.trace.AddFlags(f)
	return cmd
}

// parseGates reads --feature-gates into o.gates (exit 2 when bad).
func (o *runOptions) parseGates() error {
	g, err := gate.Parse(o.featureGates)
	if err != nil {
		return usageErr("--feature-gates: %v", err)
	}
	o.gates = g
	return nil
}

// validate checks flags before anything is read or sent.
func (o *runOptions) validate() error {
	if o.file == "" {
		return usageErr("-f/--filename is required: the pod manifest to run")
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
	for _, b := range o.breaks {
		if _, ok := steps.ParseStage(b); !ok {
			return usageErr("--break %q: expected one of %s", b, stageNames())
		}
	}
	if o.maxRestarts < -1 {
		return usageErr("--max-restarts %d: expected -1 (no limit) or a count ≥ 0", o.maxRestarts)
	}
	if o.backoffScale <= 0 || o.backoffScale > 1 {
		return usageErr("--backoff-scale %g: expected a factor in (0, 1], e.g. 0.01", o.backoffScale)
	}
	if o.settle < 0 {
		return usageErr("--settle %s: expected a duration ≥ 0", o.settle)
	}
	if err := o.parseGates(); err != nil {
		return err
	}
	if o.cgroupDriver != "cgroupfs" && o.cgroupDriver != "systemd" {
		return usageErr("--cgroup-driver %q: expected cgroupfs or systemd", o.cgroupDriver)
	}
	return nil
}

func stageNames() string {
	var s []string
	for _, st := range steps.Stages {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// loadManifest reads the manifest (stdin for "-"), at most
// manifest.MaxSize bytes of it.
func loadManifest(cmd *cobra.Command, file string) (*manifest.Bundle, error) {
	if file == "-" {
		return manifest.Read(manifest.StdinName, cmd.InOrStdin())
	}
	return manifest.Load(file)
}

// configOptions are the kubelet settings of the CRI configs; the engine adds
// the node (steps.Options.Node).
func (o *runOptions) configOptions(g *globalOptions) podcfg.Options {
	return podcfg.Options{
		RootDir: g.rootDir, LogDir: g.logDir, HugePageSizes: node.HugePageSizes(), Swap: node.SwapController(),
		ThermalThrottlePaths: node.ThermalThrottlePaths(),
		CgroupDriver:         o.cgroupDriver, CgroupsPerQOS: o.cgroupsPerQOS,
		ClusterDNS: o.clusterDNS, ClusterDomain: o.clusterDomain, Gates: o.gates,
	}
}

// nodeFor picks the node the pod runs on, once for the whole run: --node,
// else the manifest's Node, else this machine; kubelet flags apply on top.
// The engine admits the pod to it, and the CRI configs and volumes take its
// name, allocatable and capacity from it.
func (o *runOptions) nodeFor(b *manifest.Bundle) (*node.Node, error) {
	var (
		n   *node.Node
		err error
	)
	switch {
	case o.nodeFile != "":
		if n, err = node.Load(o.nodeFile); err != nil {
			return nil, usageErr("--node: %v", err)
		}
	case b.Node != nil:
		if n, err = node.FromObject(b.Node, "the manifest"); err != nil {
			return nil, usageErr("%s: Node: %v", b.File, err)
		}
	default:
		n = node.Local()
	}
	n.AllowedUnsafeSysctls = append(n.AllowedUnsafeSysctls, o.unsafeSysctls...)
	if o.maxPods > 0 {
		if n.Object.Status.Allocatable == nil {
			n.Object.Status.Allocatable = corev1.ResourceList{}
		}
		n.Object.Status.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(o.maxPods, resource.DecimalSI)
	}
	return n, nil
}

// engineOptions are the engine's options from the flags; run sets
// Simulated from the runtime it connected to.
func (o *runOptions) engineOptions(g *globalOptions) steps.Options {
	eo := steps.Options{Config: o.configOptions(g), PollInterval: o.pollInterval, InitTimeout: o.initTimeout, Node: o.node,
		MaxRestarts: o.maxRestarts, BackoffScale: o.backoffScale, Settle: o.settle, WaitReady: o.waitReady, ReadyTimeout: o.readyTimeout,
		CgroupDriverSet: o.cgroupDriverSet}
	if o.gracePeriod >= 0 {
		gp := o.gracePeriod
		eo.GracePeriod = &gp
	}
	return eo
}

func isTerminal(w io.Writer) bool {
	f, ok := safe.Raw(w).(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func runPod(cmd *cobra.Command, g *globalOptions, o *runOptions) error {
	o.cgroupDriverSet = cmd.Flags().Changed("cgroup-driver")
	if err := o.validate(); err != nil {
		return err
	}
	bundle, err := loadManifest(cmd, o.file)
	if err != nil {
		return err
	}
	if o.node, err = o.nodeFor(bundle); err != nil {
		return err
	}
	if o.tracing, err = openTracing(cmd.Context(), o.trace); err != nil {
		return err
	}
	rec, err := openRecording(o.record, o.file, forceFlag(cmd))
	if err != nil {
		return err
	}
	defer rec.close()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	interactive := !o.auto && isTerminal(stdout)
	if !o.auto && !interactive {
		fmt.Fprintln(stderr, "podstep: stdout is not a terminal: running as --auto")
	}
	if !isTerminal(stdout) {
		noColor()
	}

	// Signals: the first SIGINT/SIGTERM/SIGHUP (a closed terminal) cancels the
	// run and tears down; a second one abandons teardown (signals.go).
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sig := watchSignals(cancel, stderr)
	defer sig.stop()

	c, err := connect(ctx, g)
	if err != nil {
		rec.discard()
		if sig.interrupted() {
			fmt.Fprintln(stderr, "podstep: interrupted before anything was created")
			return silentExit(ExitInterrupted)
		}
		return err
	}
	defer c.stop()

	if interactive {
		return runInteractive(ctx, cmd, g, o, bundle, c, sig, rec)
	}

	eo := o.engineOptions(g)
	eo.Simulated = c.info.Simulated
	eng, err := steps.New(bundle, c.client, eo)
	if err != nil {
		return err
	}
	sig.watch(eng)
	o.tracing.start(ctx, c, eng)
	// A reader of stdout that goes away (`| head`) interrupts the run.
	printer := report.New(&stdoutWatch{w: stdout, gone: sig.interrupt}, o.output)
	eng.Subscribe(printer.Observe)
	rec.subscribe(eng)
	printer.Start(c.info, podName(eng))
	rec.start(ctx, cmd, o, c, bundle, eng, false)

	start := time.Now()
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	wasInterrupted := sig.interrupted()
	sum := summarize(eng, c, time.Since(start), o.keep && !wasInterrupted)

	code, msg := settle(cmd.Context(), eng, &sum, !sum.Kept, wasInterrupted, stderr)
	printer.Finish(sum)
	rec.finish(sum, stderr)
	if code == ExitPodFailed && o.output == report.JSON {
		fmt.Fprintf(stderr, "error: stage %s, step %s: %s: %s\n", sum.Failed.Stage, sum.Failed.Step, sum.Failed.Reason, sum.Failed.Message)
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	return silentExit(code)
}

// teardownBudget leaves time for every StopContainer's grace period.
func teardownBudget(eng *steps.Engine) time.Duration {
	return 5*time.Minute + time.Duration(len(eng.Pod().Spec.Containers)+len(eng.Pod().Spec.InitContainers))*time.Minute
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// timing splits the creation wall time into time in CRI calls, time spent
// deliberately waiting between polls, and podstep's own overhead.
func timing(eng *steps.Engine, calls []cri.Call, wall time.Duration) report.Timing {
	var cri time.Duration
	for _, c := range calls {
		cri += c.Duration
	}
	var waiting time.Duration
	for _, s := range eng.Steps() {
		if s.Kind.Waits() {
			var in time.Duration
			for _, c := range s.Calls {
				in += c.Duration
			}
			waiting += s.Duration - in
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return report.Timing{CreateMs: ms(wall), CRIMs: ms(cri), WaitMs: ms(waiting), OverheadMs: ms(wall - cri - waiting), Calls: len(calls)}
}
