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

	"github.com/podstep/podstep/internal/gate"
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

	// trace is --otlp-endpoint and --otlp-protocol (internal/trace); tracing
	// is the run's export, set by runPod (nil: no tracing).
	trace   trace.Options
	tracing *session.Tracing
}

// addPodFlags binds the pod flags run, plan and bench share; settle is
// --settle's default (bench's is 0: the relist is not creation).
func addPodFlags(cmd *cobra.Command, o *session.Options, settle time.Duration) {
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "pod manifest (multi-document YAML: one Pod plus its Secrets/ConfigMaps/Node); - reads stdin")
	f.StringSliceVar(&o.ClusterDNS, "cluster-dns", nil, "kubelet --cluster-dns: DNS server IPs for ClusterFirst pods (none: the host's resolv.conf, as the kubelet falls back)")
	f.StringVar(&o.ClusterDomain, "cluster-domain", "cluster.local", "kubelet --cluster-domain")
	f.StringVar(&o.CgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver when the runtime does not report one (cgroupfs or systemd)")
	f.StringVar(&o.NodeFile, "node", "", "a v1 Node YAML to admit the pod to (default: the manifest's Node, else this machine); with --pod or --kubeconfig, the NAME of a Node of the cluster (default: the pod's spec.nodeName)")
	f.StringSliceVar(&o.UnsafeSysctls, "allowed-unsafe-sysctls", nil, "kubelet --allowed-unsafe-sysctls (names or patterns ending in *)")
	f.Int64Var(&o.MaxPods, "max-pods", 0, "kubelet --max-pods: the node's pod capacity (0: the node's own, else 110)")
	f.DurationVar(&o.Settle, "settle", settle, "after the last container starts, relist this long to catch containers that exit (the kubelet's PLEG relists every 1s); 0 leaves the relist step out")
	f.BoolVar(&o.WaitReady, "wait-ready", false, "add the ready stage: run startup and readiness probes until the pod is Ready (or --ready-timeout)")
	f.StringVar(&o.FeatureGates, "feature-gates", "", "kubelet --feature-gates: Name=true|false pairs, comma-separated, over v1.37's defaults ("+strings.Join(gate.Names(), ", ")+")")
	f.BoolVar(&o.CgroupsPerQOS, "cgroups-per-qos", false, "kubelet --cgroups-per-qos: put pods under /kubepods/<qos>/pod<uid> (needs the kubepods cgroups to exist)")
}

// addClusterFlags binds the flags that read the pod, or what a manifest
// references, from an API server (internal/cluster; docs/cluster.md).
func addClusterFlags(cmd *cobra.Command, o *session.Options) {
	f := cmd.Flags()
	f.StringVar(&o.Pod, "pod", "", "[NAMESPACE/]NAME of a pod in the cluster: read it and what the kubelet fetches for it (ConfigMaps, Secrets, tokens, its Node) from the API server")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file, as kubectl's (default: $KUBECONFIG, else ~/.kube/config, else in-cluster); with -f, the manifest's references come from that cluster")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use (default: its current-context)")
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
	addPodFlags(cmd, &o.Options, time.Second)
	addClusterFlags(cmd, &o.Options)
	f := cmd.Flags()
	f.BoolVar(&o.auto, "auto", false, "run every step without stopping (for CI and scripts)")
	f.BoolVar(&o.keep, "keep", false, "leave the pod running at the end (remove it later with podstep cleanup)")
	f.Int64Var(&o.GracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.StringSliceVar(&o.Breaks, "break", nil, "stop before these stages in the TUI (e.g. sandbox,containers)")
	f.StringVarP(&o.output, "output", "o", report.Text, "output of --auto: text (each step, what it changed in the pod, its kubelet events), short (one line per step) or json")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "one line per step, without what it changed or its events: -o short")
	f.DurationVar(&o.PollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs (the kubelet's PLEG relists every 1s)")
	f.DurationVar(&o.InitTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.IntVar(&o.MaxRestarts, "max-restarts", 3, "restarts of one container (the kubelet's CrashLoopBackOff) before podstep gives up; -1: no limit, as the kubelet")
	f.Float64Var(&o.BackoffScale, "backoff-scale", 1, "multiply the kubelet's back-off delays (10s doubling to 5m) by this for the time podstep waits, e.g. 0.01 in CI")
	f.DurationVar(&o.ReadyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	f.StringVar(&o.record, "record", "", "record the run into this file for podstep replay (FILE.gz: compressed)")
	o.trace.AddFlags(f)
	return cmd
}

// validate checks flags before anything is read or sent.
func (o *runOptions) validate(cmd *cobra.Command, g *globalOptions) error {
	o.CgroupDriverSet = cmd.Flags().Changed("cgroup-driver")
	o.RootDir, o.LogDir = g.rootDir, g.logDir
	o.Stderr = cmd.ErrOrStderr()
	if err := o.Options.Validate(); err != nil {
		return err
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
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := safe.Raw(w).(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
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

	c, err := session.Connect(ctx, g.ep)
	if err != nil {
		rec.Discard()
		return notStarted(sig, err, stderr)
	}
	defer c.Stop()
	eng := steps.New(bundle, c.Client, o.Engine(c.Runtime.Simulated))
	sig.watch(eng)
	o.tracing.Start(ctx, c, eng)
	begin := session.Begin{Podstep: version, Interactive: interactive, Output: o.output, Flags: cmd.Flags(), Node: o.Node, Stderr: stderr}
	if interactive {
		rec.Start(ctx, c, bundle, eng, begin)
		return runInteractive(ctx, cmd, g, o, eng, c, sig, rec)
	}
	// A reader of stdout that goes away (`| head`) interrupts the run.
	printer := report.New(&stdoutWatch{w: stdout, gone: sig.interrupt}, o.output)
	eng.Subscribe(printer.Observe)
	printer.Start(c.Runtime, session.PodName(eng))
	rec.Start(ctx, c, bundle, eng, begin)
	return runAuto(ctx, cmd.Context(), eng, c, sig, o, printer, rec, stderr)
}

// runAuto runs every step, then settles the run (session.Settle).
func runAuto(ctx, parent context.Context, eng *steps.Engine, c *session.Conn, sig *interrupts, o *runOptions,
	printer *report.Printer, rec *session.Recording, stderr io.Writer) error {
	start := time.Now()
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	wasInterrupted := sig.interrupted()
	sum := session.Summarize(eng, c.Client.Calls(), time.Since(start), o.keep && !wasInterrupted)
	code, msg := session.Settle(parent, eng, &sum, !sum.Kept, wasInterrupted, stderr)
	var viewErr error
	if sum.Cluster, viewErr = o.ClusterView(parent, eng); viewErr != nil && code == ExitOK {
		code, msg = session.Code(viewErr), "error: "+viewErr.Error()
	}
	printer.Finish(sum)
	rec.Finish(sum, stderr)
	if code == ExitPodFailed && o.output == report.JSON {
		fmt.Fprintf(stderr, "error: stage %s, step %s: %s: %s\n", sum.Failed.Stage, sum.Failed.Step, sum.Failed.Reason, sum.Failed.Message)
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	return session.Silent(code)
}

// notStarted is the error of a run that ended before anything was created:
// an interrupt while connecting is exit 130, said once; else err.
func notStarted(sig *interrupts, err error, stderr io.Writer) error {
	if sig.interrupted() {
		fmt.Fprintln(stderr, "podstep: interrupted before anything was created")
		return session.Silent(ExitInterrupted)
	}
	return err
}
