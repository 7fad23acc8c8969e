package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/workload"
)

// Flags are `podstep fleet`'s and `podstep fleet cleanup`'s settings as
// given on the command line (cmd/podstep binds them with AddFlags and
// AddCleanupFlags); Command and CleanupCommand check and run them.
type Flags struct {
	File, Pod string
	// Select is --select KIND/NAME: the Pod or workload of -f.
	Select     string
	Nodes      []string
	Selector   string
	Kubeconfig string
	Context    string
	// AllowExecPlugins is --allow-exec-plugins (internal/cluster).
	AllowExecPlugins bool
	Namespace        string
	Image            string
	PullPolicy       string
	ServiceAccount   string
	HostDir          string
	Timeout          time.Duration
	RunTimeout       time.Duration
	Concurrency      int
	Record           string
	Output           string
	RunFlags         []string
	RunnerServer     string
	// Version is podstep's version (cmd/podstep's podstepVersion): with no
	// --image, the runner image is the release image of that version.
	Version func() string
	// Endpoint is the global -r: every node's runtime endpoint.
	Endpoint string
	// Shadow is --shadow: auto, always or never (session.ShadowAuto, ...).
	Shadow string
	// CleanupID and CleanupWait are `fleet cleanup`'s --id and --wait.
	CleanupID   string
	CleanupWait time.Duration
}

// AddFlags binds `podstep fleet`'s flags.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	f.StringVarP(&o.File, "filename", "f", "", "pod manifest (its Secrets are not handed to the runners: they read Secrets from the API server)")
	f.StringVar(&o.Pod, "pod", "", "replay the cluster's pod NAMESPACE/NAME (or NAME in the context's namespace)")
	f.StringVar(&o.Select, "select", "", "KIND/NAME of the Pod or workload of -f to replay when the file has several (deploy/web, sts/db, ds/agent, job/migrate, pod/web)")
	f.StringSliceVar(&o.Nodes, "node", nil, "a node to replay on (repeatable; default: every node, or --nodes)")
	f.StringVar(&o.Selector, "nodes", "", "label selector of the nodes to replay on (e.g. kubernetes.io/os=linux)")
	o.addAPIFlags(f)
	f.StringVar(&o.Image, "image", os.Getenv("PODSTEP_FLEET_IMAGE"), "the runner image: podstep's static binary (env PODSTEP_FLEET_IMAGE; default: the release image of this version, "+ReleaseImageRepo+":VERSION; docs/install.md)")
	f.StringVar(&o.PullPolicy, "image-pull-policy", string(corev1.PullIfNotPresent), "the runner image's pull policy (Always, IfNotPresent, Never)")
	f.StringVar(&o.ServiceAccount, "service-account", DefaultServiceAccount, "the runners' service account (deploy/fleet.yaml)")
	f.StringVar(&o.HostDir, "host-dir", DefaultHostDir, "on each node's host, the dir under which the runner keeps its root and log dirs (DIR/<node>/root, DIR/<node>/logs; the runner removes them at its end)")
	f.DurationVar(&o.Timeout, "timeout", time.Minute, "how long a runner may take to start before its node is reported \"runner not started\"")
	f.DurationVar(&o.RunTimeout, "run-timeout", 10*time.Minute, "how long a started runner may run")
	f.IntVar(&o.Concurrency, "concurrency", 10, "runners at once")
	f.StringVar(&o.Record, "record", "", "keep each node's recording in this dir (NODE.podstep.gz: podstep replay, podstep diff)")
	f.StringVarP(&o.Output, "output", "o", report.Text, "text (progress, then the table) or json (one object: every node's steps, the analysis)")
	f.StringVar(&o.RunnerServer, "runner-server", "", "the API server URL the runners read the pod's Secrets, ConfigMaps and tokens from, https://HOST[:PORT] (default: the in-cluster kubernetes Service)")
	f.StringVar(&o.Shadow, "shadow", session.ShadowAuto, "replay on a shadow runtime each runner starts from its node's own containerd, config, runtimes and CNI plugins, in the host's mount namespace, removed at its end: auto (on the kubelet's runtime, when its kubelet watches it; never on -r's or the node's podstep.dev/replay-endpoint runtime), always, or never")
	f.StringArrayVar(&o.RunFlags, "run-flag", nil, "an extra flag for every runner's podstep run (repeatable, e.g. --run-flag=--settle=0)")
}

// AddCleanupFlags binds `podstep fleet cleanup`'s flags.
func (o *Flags) AddCleanupFlags(f *pflag.FlagSet) {
	o.addAPIFlags(f)
	f.StringVar(&o.CleanupID, "id", "", "only the fleet with this id (default: every fleet in the namespace)")
	f.DurationVar(&o.CleanupWait, "wait", time.Minute, "wait this long for the garbage collector to remove the runners (0: do not wait)")
}

// addAPIFlags: --kubeconfig and --context, as kubectl's, and the namespace.
func (o *Flags) addAPIFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context (default: its current-context)")
	f.BoolVar(&o.AllowExecPlugins, session.AllowExecPluginsFlag, false, session.AllowExecPluginsUsage)
	f.StringVarP(&o.Namespace, "namespace", "n", DefaultNamespace, "namespace of the runner pods and their ConfigMaps (deploy/fleet.yaml makes it)")
}

// ReleaseImageRepo is where the release images of the runner are
// published: ReleaseImageRepo:vX.Y.Z, podstep's binary of that release
// (docs/install.md).
const ReleaseImageRepo = "ghcr.io/podstep/podstep"

// isRelease: version is a release's, vX.Y.Z with nothing after (no
// regexp at package init: every command would pay for it).
func isRelease(version string) bool {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if !strings.HasPrefix(version, "v") || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// ReleaseImage is the runner image of podstep's version: the release
// image of that release; a dev build (0.1.0-dev, a snapshot, a git
// describe between tags) has none: an error naming the version.
func ReleaseImage(version string) (string, error) {
	if !isRelease(version) {
		if version == "" {
			version = "unknown"
		}
		return "", fmt.Errorf("podstep %s is not a release, so it has no release image", version)
	}
	return ReleaseImageRepo + ":" + version, nil
}

// Validate checks the flags before anything is read or sent (exit 2).
func (o *Flags) Validate() error {
	if (o.File == "") == (o.Pod == "") {
		return session.Usagef("give the pod with -f FILE or --pod NAMESPACE/NAME (one of them)")
	}
	if len(o.Nodes) > 0 && o.Selector != "" {
		return session.Usagef("--node and --nodes: give one of them")
	}
	if o.Select != "" && o.File == "" {
		return session.Usagef("--select %s: expected -f FILE too (it chooses a pod or workload of the file)", o.Select)
	}
	if o.Image == "" {
		v := ""
		if o.Version != nil {
			v = o.Version()
		}
		img, err := ReleaseImage(v)
		if err != nil {
			return session.Usagef("--image is required: %v; build the runner image with hack/image-build.sh and give it with --image (or PODSTEP_FLEET_IMAGE) (docs/install.md)", err)
		}
		o.Image = img
	}
	switch corev1.PullPolicy(o.PullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return session.Usagef("--image-pull-policy %q: expected Always, IfNotPresent or Never", o.PullPolicy)
	}
	if err := session.CheckOutput(o.Output, report.Text, report.JSON); err != nil {
		return err
	}
	if err := session.CheckShadow(o.Shadow, false); err != nil {
		return err
	}
	if o.Concurrency < 1 {
		return session.Usagef("--concurrency %d: expected at least 1", o.Concurrency)
	}
	if o.Timeout <= 0 || o.RunTimeout <= 0 {
		return session.Usagef("--timeout and --run-timeout: expected durations > 0")
	}
	if err := CheckAPIServer(o.RunnerServer); err != nil {
		return session.Usagef("%v", err)
	}
	if !path.IsAbs(o.HostDir) || path.Clean(o.HostDir) == "/" {
		return session.Usagef("--host-dir %q: expected an absolute path of a dir of its own on each node's host (its runners' dirs go under it and are removed at their end)", o.HostDir)
	}
	for _, rf := range o.RunFlags {
		if !strings.HasPrefix(rf, "--") {
			return session.Usagef("--run-flag %q: expected a podstep run flag such as --settle=0", rf)
		}
	}
	return nil
}

// options turns the flags into the fleet's Options (the pod not yet read).
func (o *Flags) options(progress io.Writer) Options {
	return Options{Nodes: o.Nodes, Selector: o.Selector, Namespace: o.Namespace, Image: o.Image,
		PullPolicy: corev1.PullPolicy(o.PullPolicy), ServiceAccount: o.ServiceAccount, HostDir: o.HostDir,
		Endpoint: o.Endpoint, Shadow: o.Shadow, RunArgs: o.RunFlags, APIServer: o.RunnerServer, Timeout: o.Timeout, RunTimeout: o.RunTimeout,
		Concurrency: o.Concurrency, Record: o.Record, Progress: progress}
}

// Errors maps the fleet's errors to exit codes: access and bad input 2,
// an API server that does not answer 3, anything else 3.
func Errors(err error) error {
	var (
		ae *AccessError
		ue *UnreachableError
		se *session.Error
		me *manifest.Error
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se), errors.As(err, &me):
		return err
	case errors.As(err, &ae):
		return session.Usagef("%v", err)
	case errors.As(err, &ue):
		return session.RuntimeErr(err)
	}
	return &session.Error{Code: session.ExitRuntime, Err: err}
}

// Command is `podstep fleet`: it checks the flags, reads the pod (-f, its
// Secrets left behind; or --pod from the API server), runs the fleet with
// the run's signal handling (the first Ctrl-C deletes the runners, each
// tearing its pod down; a second leaves them to `fleet cleanup`), writes
// the table or JSON, and returns the exit code as an error (session's).
func Command(ctx context.Context, o Flags, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	fo := o.options(stderr)
	if o.File != "" {
		if err := fo.readManifest(o.File, o.Select, stdin, stderr); err != nil {
			return err
		}
	}
	c, err := Connect(o.Kubeconfig, o.Context, o.AllowExecPlugins, stderr)
	if err != nil {
		return session.Usagef("%v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
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
	if o.Pod != "" {
		ns, name, ok := strings.Cut(o.Pod, "/")
		if !ok {
			ns, name = c.Namespace, o.Pod
		}
		if fo.Pod, err = PodFromCluster(ctx, c, ns, name); err != nil {
			return Errors(err)
		}
	}
	fo.PodName = fo.Pod.Name
	if fo.Pod.Namespace != "" {
		fo.PodName = fo.Pod.Namespace + "/" + fo.Pod.Name
	}
	out, err := Run(ctx, c, fo)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "podstep fleet: interrupted before any runner was made")
			return session.Silent(session.InterruptedCode())
		}
		return Errors(err)
	}
	if o.Output == report.JSON {
		err = WriteJSON(stdout, fo.PodName, out.Results, out.Analysis)
	} else {
		err = WriteText(stdout, out.Results, out.Analysis)
	}
	if err != nil {
		return err
	}
	total, peak := c.Requests()
	fmt.Fprintf(stderr, "podstep fleet %s: %s (%d API requests, at most %d in one second)\n", out.ID, out.Deleted, total, peak)
	switch out.Analysis.ExitCode {
	case session.ExitOK:
		return nil
	case session.ExitInterrupted:
		return session.Silent(session.InterruptedCode()) // 128+N of the signal, as every command
	}
	return session.Silent(out.Analysis.ExitCode)
}

// readManifest reads -f: the pod and its ConfigMaps go to the runners,
// its Secrets never do (the runners read Secrets from the API server).
func (fo *Options) readManifest(file, sel string, stdin io.Reader, stderr io.Writer) error {
	var (
		b   *manifest.Bundle
		err error
	)
	if file == "-" {
		b, err = manifest.ReadWith(manifest.StdinName, stdin, manifest.Options{Select: sel})
	} else {
		b, err = manifest.LoadWith(file, manifest.Options{Select: sel})
	}
	if err != nil {
		return err
	}
	fo.Pod = b.Pod
	if b.Workload != nil {
		fmt.Fprintf(stderr, "podstep fleet: %s\n", b.Workload.Summary())
		if b.Workload.From.Kind == workload.KindDaemonSet {
			// Each runner replays on its own node: the node affinity
			// ReplaceDaemonSetPodNodeNameNodeAffinity would set differs per node.
			workload.UnbindNode(fo.Pod)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.ConfigMaps)) {
		fo.ConfigMaps = append(fo.ConfigMaps, b.ConfigMaps[k])
	}
	if n := len(b.Secrets); n > 0 {
		fmt.Fprintf(stderr, "podstep fleet: the manifest's %d Secret(s) are not handed to the runners: they read Secrets from the API server\n", n)
	}
	return nil
}

// CleanupCommand is `podstep fleet cleanup`: it deletes the fleets'
// parents (the garbage collector removes the rest) and says what went.
func CleanupCommand(ctx context.Context, o Flags, stdout io.Writer) error {
	c, err := Connect(o.Kubeconfig, o.Context, o.AllowExecPlugins, os.Stderr)
	if err != nil {
		return session.Usagef("%v", err)
	}
	d, err := Cleanup(ctx, c, o.Namespace, o.CleanupID, o.CleanupWait)
	if err != nil {
		return Errors(err)
	}
	if d.Parents == 0 {
		fmt.Fprintf(stdout, "nothing to clean in namespace %s\n", o.Namespace)
		return nil
	}
	fmt.Fprintf(stdout, "deleted %d fleet parent(s); the garbage collector removed %d runner pod(s) and %d ConfigMap(s)\n", d.Parents, d.Pods, d.ConfigMaps)
	return nil
}
