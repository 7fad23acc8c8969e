package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/fleet"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
)

// fleetOptions are the flags of `podstep fleet`.
type fleetOptions struct {
	file, pod      string
	nodes          []string
	selector       string
	kubeconfig     string
	context        string
	namespace      string
	image          string
	pullPolicy     string
	serviceAccount string
	hostDir        string
	timeout        time.Duration
	runTimeout     time.Duration
	concurrency    int
	record         string
	output         string
	runFlags       []string
	runnerServer   string
	cleanupID      string
	cleanupWait    time.Duration
}

func newFleetCmd(g *globalOptions) *cobra.Command {
	o := &fleetOptions{}
	cmd := &cobra.Command{
		Use:   "fleet -f POD.yaml | --pod NS/NAME [--nodes SELECTOR | --node N ...]",
		Short: "Replay one pod on many nodes of a cluster, each by a runner pod on the node, and name the odd node",
		Long: `fleet creates, for each selected node, a runner pod pinned to it (spec.nodeName, as
kubectl debug node does) that runs "podstep run --auto -o json" against the node's
runtime, with the node's kubelet settings (its configz, through the API server): the
runtime of the node's podstep.dev/replay-endpoint annotation (one no kubelet watches),
else the kubelet's own, whose housekeeping may stop the replay (docs/fleet.md). It
streams the runners' results, then prints a table of the nodes side by side, names the
nodes whose steps differ from the majority (the first differing step and the fields of
its requests that differ) and the stage times that are outliers.

Every object it creates carries the podstep.dev/fleet label and is owned by one parent
ConfigMap: podstep deletes them at the end and on Ctrl-C, and "podstep fleet cleanup"
(deleting the parents; the garbage collector does the rest) removes any a killed podstep
left. The runner image is built by hack/image-build.sh (docs/fleet.md).`,
		Example: `  podstep fleet -f pod.yaml --image registry.example/podstep:v1
  podstep fleet --pod web/web-7d4b9c-x2k9p --nodes node-role.kubernetes.io/worker= -o json
  podstep fleet -f pod.yaml --node node-a --node node-b --timeout 30s --record runs/
  podstep fleet cleanup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFleet(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "pod manifest (its Secrets are not handed to the runners: they read Secrets from the API server)")
	f.StringVar(&o.pod, "pod", "", "replay the cluster's pod NAMESPACE/NAME (or NAME in the context's namespace)")
	f.StringSliceVar(&o.nodes, "node", nil, "a node to replay on (repeatable; default: every node, or --nodes)")
	f.StringVar(&o.selector, "nodes", "", "label selector of the nodes to replay on (e.g. kubernetes.io/os=linux)")
	addKubeconfigFlags(f, &o.kubeconfig, &o.context)
	f.StringVarP(&o.namespace, "namespace", "n", fleet.DefaultNamespace, "namespace of the runner pods and their ConfigMaps (deploy/fleet.yaml makes it)")
	f.StringVar(&o.image, "image", os.Getenv("PODSTEP_FLEET_IMAGE"), "the runner image: podstep's static binary (hack/image-build.sh; env PODSTEP_FLEET_IMAGE)")
	f.StringVar(&o.pullPolicy, "image-pull-policy", string(corev1.PullIfNotPresent), "the runner image's pull policy (Always, IfNotPresent, Never)")
	f.StringVar(&o.serviceAccount, "service-account", fleet.DefaultServiceAccount, "the runners' service account (deploy/fleet.yaml)")
	f.StringVar(&o.hostDir, "host-dir", fleet.DefaultHostDir, "on each node's host, the dir under which the runner keeps its root and log dirs (DIR/<node>/root, DIR/<node>/logs)")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long a runner may take to start before its node is reported \"runner not started\"")
	f.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "how long a started runner may run")
	f.IntVar(&o.concurrency, "concurrency", 10, "runners at once")
	f.StringVar(&o.record, "record", "", "keep each node's recording in this dir (NODE.podstep.gz: podstep replay, podstep diff)")
	f.StringVarP(&o.output, "output", "o", report.Text, "text (progress, then the table) or json (one object: every node's steps, the analysis)")
	f.StringVar(&o.runnerServer, "runner-server", "", "the API server URL the runners read the pod's Secrets, ConfigMaps and tokens from, https://HOST[:PORT] (default: the in-cluster kubernetes Service)")
	f.StringArrayVar(&o.runFlags, "run-flag", nil, "an extra flag for every runner's podstep run (repeatable, e.g. --run-flag=--settle=0)")
	cmd.AddCommand(newFleetCleanupCmd(o))
	return cmd
}

// addKubeconfigFlags adds --kubeconfig and --context, as kubectl's.
func addKubeconfigFlags(f interface {
	StringVar(*string, string, string, string)
}, kubeconfig, context *string) {
	f.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.StringVar(context, "context", "", "kubeconfig context (default: its current-context)")
}

func newFleetCleanupCmd(parent *fleetOptions) *cobra.Command {
	o := &fleetOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete what podstep fleets left in the cluster (their parents; the garbage collector removes the rest)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := fleet.Connect(o.kubeconfig, o.context)
			if err != nil {
				return session.Usagef("%v", err)
			}
			d, err := fleet.Cleanup(cmd.Context(), c, o.namespace, o.cleanupID, o.cleanupWait)
			if err != nil {
				return fleetErr(err)
			}
			w := cmd.OutOrStdout()
			if d.Parents == 0 {
				fmt.Fprintf(w, "nothing to clean in namespace %s\n", o.namespace)
				return nil
			}
			fmt.Fprintf(w, "deleted %d fleet parent(s); the garbage collector removed %d runner pod(s) and %d ConfigMap(s)\n", d.Parents, d.Pods, d.ConfigMaps)
			return nil
		},
	}
	f := cmd.Flags()
	addKubeconfigFlags(f, &o.kubeconfig, &o.context)
	f.StringVarP(&o.namespace, "namespace", "n", fleet.DefaultNamespace, "namespace of the runners")
	f.StringVar(&o.cleanupID, "id", "", "only the fleet with this id (default: every fleet in the namespace)")
	f.DurationVar(&o.cleanupWait, "wait", time.Minute, "wait this long for the garbage collector to remove the runners (0: do not wait)")
	return cmd
}

// fleetErr maps the fleet's errors to exit codes: access and bad input 2,
// an API server that does not answer 3.
func fleetErr(err error) error {
	var ae *fleet.AccessError
	var ue *fleet.UnreachableError
	switch {
	case errors.As(err, &ae):
		return session.Usagef("%v", err)
	case errors.As(err, &ue):
		return session.RuntimeErr(err)
	}
	return &session.Error{Code: session.ExitRuntime, Err: err}
}

func (o *fleetOptions) validate() error {
	if (o.file == "") == (o.pod == "") {
		return session.Usagef("give the pod with -f FILE or --pod NAMESPACE/NAME (one of them)")
	}
	if len(o.nodes) > 0 && o.selector != "" {
		return session.Usagef("--node and --nodes: give one of them")
	}
	if o.image == "" {
		return session.Usagef("--image is required: the runner image (build it with hack/image-build.sh; docs/fleet.md)")
	}
	switch corev1.PullPolicy(o.pullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return session.Usagef("--image-pull-policy %q: expected Always, IfNotPresent or Never", o.pullPolicy)
	}
	if o.output != report.Text && o.output != report.JSON {
		return session.Usagef("-o/--output %q: expected text or json", o.output)
	}
	if o.concurrency < 1 {
		return session.Usagef("--concurrency %d: expected at least 1", o.concurrency)
	}
	if o.timeout <= 0 || o.runTimeout <= 0 {
		return session.Usagef("--timeout and --run-timeout: expected durations > 0")
	}
	if err := fleet.CheckAPIServer(o.runnerServer); err != nil {
		return session.Usagef("%v", err)
	}
	for _, rf := range o.runFlags {
		if !strings.HasPrefix(rf, "--") {
			return session.Usagef("--run-flag %q: expected a podstep run flag such as --settle=0", rf)
		}
	}
	return nil
}

func runFleet(cmd *cobra.Command, g *globalOptions, o *fleetOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	fo := fleet.Options{Nodes: o.nodes, Selector: o.selector, Namespace: o.namespace, Image: o.image,
		PullPolicy: corev1.PullPolicy(o.pullPolicy), ServiceAccount: o.serviceAccount, HostDir: o.hostDir,
		Endpoint: g.ep.Runtime, RunArgs: o.runFlags, APIServer: o.runnerServer, Timeout: o.timeout, RunTimeout: o.runTimeout,
		Concurrency: o.concurrency, Record: o.record, Progress: stderr}
	if o.file != "" {
		var (
			b   *manifest.Bundle
			err error
		)
		if o.file == "-" {
			b, err = manifest.Read(manifest.StdinName, cmd.InOrStdin())
		} else {
			b, err = manifest.Load(o.file)
		}
		if err != nil {
			return err
		}
		fo.Pod = b.Pod
		for _, k := range slices.Sorted(maps.Keys(b.ConfigMaps)) {
			fo.ConfigMaps = append(fo.ConfigMaps, b.ConfigMaps[k])
		}
		if n := len(b.Secrets); n > 0 {
			fmt.Fprintf(stderr, "podstep fleet: the manifest's %d Secret(s) are not handed to the runners: they read Secrets from the API server\n", n)
		}
	}
	c, err := fleet.Connect(o.kubeconfig, o.context)
	if err != nil {
		return session.Usagef("%v", err)
	}

	// The first Ctrl-C (SIGINT, SIGTERM, SIGHUP; timeout's second copy is
	// the same one) stops the fleet: the runners are deleted (each tears its
	// pod down) and podstep waits for them; a second one exits at once.
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sig := session.WatchSignals(cancel, stderr)
	defer sig.Stop()
	sig.OnAbandon(func(w io.Writer) int {
		fmt.Fprintln(w, "podstep fleet: abandoned: the runners left are removed by: podstep fleet cleanup")
		return session.InterruptedCode()
	})
	defer context.AfterFunc(ctx, func() {
		if sig.Interrupted() {
			fmt.Fprintln(stderr, "podstep fleet: interrupted: deleting the runners (each tears its pod down); Ctrl-C again to leave them to podstep fleet cleanup")
		}
	})()

	if o.pod != "" {
		ns, name, ok := strings.Cut(o.pod, "/")
		if !ok {
			ns, name = c.Namespace, o.pod
		}
		if fo.Pod, err = fleet.PodFromCluster(ctx, c, ns, name); err != nil {
			return fleetErr(err)
		}
	}
	fo.PodName = fo.Pod.Name
	if fo.Pod.Namespace != "" {
		fo.PodName = fo.Pod.Namespace + "/" + fo.Pod.Name
	}
	out, err := fleet.Run(ctx, c, fo)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "podstep fleet: interrupted before any runner was made")
			return session.Silent(session.InterruptedCode())
		}
		return fleetErr(err)
	}
	w := cmd.OutOrStdout()
	if o.output == report.JSON {
		err = fleet.WriteJSON(w, fo.PodName, out.Results, out.Analysis)
	} else {
		err = fleet.WriteText(w, out.Results, out.Analysis)
	}
	if err != nil {
		return err
	}
	total, peak := c.Requests()
	fmt.Fprintf(stderr, "podstep fleet %s: %s (%d API requests, at most %d in one second)\n", out.ID, out.Deleted, total, peak)
	switch out.Analysis.ExitCode {
	case ExitOK:
		return nil
	case ExitInterrupted:
		return session.Silent(session.InterruptedCode()) // 128+N of the signal, as every command
	}
	return session.Silent(out.Analysis.ExitCode)
}
