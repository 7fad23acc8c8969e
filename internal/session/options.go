package session

import (
	"context"
	"io"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/workload"
)

// Options are a pod run's settings: the flags `podstep run`, `plan` and
// `bench` share (cmd binds them), checked by Validate. New settings
// (a cluster's, a fleet's) are new fields here.
type Options struct {
	File string // -f: the manifest ("-": stdin)
	// Select is --select KIND/NAME: the Pod or workload of -f to replay
	// when the file has several (internal/workload.ParseRef's forms).
	Select string
	// Scenario is --scenario NAME: a built-in scenario's manifest
	// (internal/scenario) instead of -f; its feature gates apply unless
	// --feature-gates is given.
	Scenario string
	RootDir  string // --root-dir, absolute
	LogDir   string // --log-dir, absolute
	// RootDirGiven, LogDirGiven: the flag was given (else, on the simulated
	// runtime, the run's own sim dir holds them: UseRuntime).
	RootDirGiven, LogDirGiven bool
	GracePeriod               int64 // -1: the pod's terminationGracePeriodSeconds
	Breaks                    []string
	ClusterDNS                []string
	ClusterDomain             string
	CgroupDriver              string
	// CgroupDriverSet: --cgroup-driver was given (else it is the default).
	CgroupDriverSet bool
	CgroupRoot      string     // --cgroup-root (the kubelet's; with --cgroups-per-qos)
	FeatureGates    string     // --feature-gates as given
	Gates           gate.Gates // parsed by Validate
	CgroupsPerQOS   bool
	PollInterval    time.Duration
	InitTimeout     time.Duration
	NodeFile        string
	UnsafeSysctls   []string
	MaxPods         int64
	MaxRestarts     int
	BackoffScale    float64
	Settle          time.Duration
	WaitReady       bool
	ReadyTimeout    time.Duration

	// CSIEndpoints are --csi-endpoint's, CSIRegistryDir where registered
	// CSI drivers are looked for ("": csi.DefaultRegistryDir).
	CSIEndpoints   csi.Endpoints
	CSIRegistryDir string

	// Pod is --pod [NAMESPACE/]NAME: the pod is read from the API server.
	Pod string
	// Kubeconfig and Context are --kubeconfig and --context (kubectl's):
	// with -f, the manifest's references are read from that cluster.
	Kubeconfig, Context string
	// InCluster is --in-cluster: the API server and credentials of the pod
	// podstep runs in (a fleet runner's service account).
	InCluster bool
	// AllowExecPlugins is --allow-exec-plugins: run a kubeconfig's exec
	// credential plugin even from a file another user owns or may write
	// (internal/cluster refuses it otherwise).
	AllowExecPlugins bool
	// FleetHostDir is --fleet-host-dir (hidden; a fleet runner's): the
	// node's host dir the root and log dirs are under, emptied and
	// removed at the end of the run (RemoveHostDirs).
	FleetHostDir string
	// NoTokens leaves the TokenRequests out (podstep plan mints nothing).
	NoTokens bool
	// Changed says whether a flag was given (cobra's Flags().Changed): a
	// node setting read from the node's kubelet (configz) does not
	// override a flag given. nil: none was.
	Changed func(flag string) bool
	// From says where each node setting came from (steps.Options.From);
	// LoadManifest fills it from the node's configz with --pod.
	From map[string]string

	// Node is the node chosen for admission (LoadManifest sets it).
	Node *node.Node
	// Cluster is the API server the pod's objects come from (LoadManifest
	// sets it with --pod, --kubeconfig or --context; nil otherwise).
	Cluster *ClusterRun
	// Stderr gets the line saying what was fetched (nil: none).
	Stderr io.Writer
}

// Validate checks the settings before anything is read or sent (exit 2),
// the same for every command that runs or plans a pod, and parses
// --feature-gates into Gates.
func (o *Options) Validate() error {
	if err := o.validateScenario(); err != nil {
		return err
	}
	if o.Select != "" {
		if _, err := workload.ParseRef(o.Select); err != nil {
			return Usagef("--select: %v", err)
		}
		if o.File == "" {
			return Usagef("--select %s: expected -f FILE too (it chooses a pod or workload of the file)", o.Select)
		}
	}
	if err := o.validateCluster(); err != nil {
		return err
	}
	for _, b := range o.Breaks {
		if err := checkBreak(b); err != nil {
			return err
		}
	}
	if o.MaxRestarts < -1 {
		return Usagef("--max-restarts %d: expected -1 (no limit) or a count ≥ 0", o.MaxRestarts)
	}
	if o.BackoffScale <= 0 || o.BackoffScale > 1 {
		return Usagef("--backoff-scale %g: expected a factor in (0, 1], e.g. 0.01", o.BackoffScale)
	}
	if o.Settle < 0 {
		return Usagef("--settle %s: expected a duration ≥ 0", o.Settle)
	}
	g, err := gate.Parse(o.FeatureGates)
	if err != nil {
		return Usagef("--feature-gates: %v", err)
	}
	o.Gates = g
	if o.CgroupDriver != "cgroupfs" && o.CgroupDriver != "systemd" {
		return Usagef("--cgroup-driver %q: expected cgroupfs or systemd", o.CgroupDriver)
	}
	return nil
}

// StageNames lists the stages, for messages.
func StageNames() string {
	var s []string
	for _, st := range steps.Stages {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// checkBreak checks a --break value: a stage, or a step name as `podstep
// plan` and the TUI's plan pane write them (start/app, relist), the
// container part a glob (create/*); a per-container kind alone (pull) is
// every container's step of that kind.
func checkBreak(b string) error {
	if _, ok := steps.ParseStage(b); ok {
		return nil
	}
	kind, ctr, hasCtr := strings.Cut(b, "/")
	k := steps.KindOf(kind)
	switch {
	case k == 0:
		return Usagef("--break %q: expected a stage (%s) or a step name such as start/app, create/* or relist (`podstep plan` lists a pod's steps)", b, StageNames())
	case hasCtr && !k.PerContainer():
		return Usagef("--break %q: the %s step is not a container's; expected %q", b, kind, kind)
	case hasCtr:
		if _, err := path.Match(ctr, ""); err != nil || ctr == "" {
			return Usagef("--break %q: expected a container name or a glob after %s/, such as %s/app or %s/*", b, kind, kind, kind)
		}
	}
	return nil
}

// BreakStages are the validated --break values that are stages.
func (o *Options) BreakStages() []steps.Stage {
	var names []string
	for _, b := range o.Breaks {
		if _, ok := steps.ParseStage(b); ok {
			names = append(names, b)
		}
	}
	return ParseStages(names)
}

// BreakSteps are the validated --break values that are step names (or
// globs of them): the TUI stops before each step of the plan they match
// (MatchBreak).
func (o *Options) BreakSteps() []string {
	var out []string
	for _, b := range o.Breaks {
		if _, ok := steps.ParseStage(b); !ok {
			out = append(out, b)
		}
	}
	return out
}

// ParseStages parses validated stage names.
func ParseStages(names []string) []steps.Stage {
	var out []steps.Stage
	for _, n := range names {
		st, _ := steps.ParseStage(n)
		out = append(out, st)
	}
	return out
}

// LoadManifest reads the manifest (stdin for "-"), at most manifest.MaxSize
// bytes of it, and picks its node (NodeFor) into o.Node.
func (o *Options) LoadManifest(stdin io.Reader) (*manifest.Bundle, error) {
	var (
		b   *manifest.Bundle
		err error
	)
	switch {
	case o.Pod != "":
	case o.Scenario != "":
		b, err = o.scenarioBundle()
	case o.File == "-":
		b, err = manifest.ReadWith(manifest.StdinName, stdin, manifest.Options{Select: o.Select})
	default:
		b, err = manifest.LoadWith(o.File, manifest.Options{Select: o.Select})
	}
	if err != nil {
		return nil, err
	}
	if o.usesCluster() {
		if b, err = o.loadCluster(context.Background(), b, o.Stderr); err != nil {
			return nil, err
		}
	}
	if o.Node, err = o.NodeFor(b); err != nil {
		return nil, err
	}
	if b.Workload != nil && b.Workload.From.Kind == workload.KindDaemonSet {
		// ReplaceDaemonSetPodNodeNameNodeAffinity binds the pod to the
		// node the DaemonSet controller made it for: the node it runs on.
		workload.SetNode(b.Pod, o.Node.Name())
	}
	return b, nil
}

// NodeFor picks the node the pod runs on, once for the whole run: --node,
// else the manifest's Node, else this machine; kubelet flags apply on top.
// The engine admits the pod to it, and the CRI configs and volumes take its
// name, allocatable and capacity from it.
func (o *Options) NodeFor(b *manifest.Bundle) (*node.Node, error) {
	var (
		n   *node.Node
		err error
	)
	switch {
	case o.Cluster != nil && o.Cluster.Resolved.Node != nil:
		n = o.Cluster.Resolved.Node
	case o.NodeFile != "":
		if n, err = node.Load(o.NodeFile); err != nil {
			return nil, Usagef("--node: %v", err)
		}
	case b.Node != nil:
		if n, err = node.FromObject(b.Node, "the manifest"); err != nil {
			return nil, Usagef("%s: Node: %v", b.File, err)
		}
	default:
		n = node.Local()
		if b != nil && b.Pod != nil {
			// A pod copied from a cluster names its node: this
			// machine plays it (one warning, at admission).
			n.Play(b.Pod.Spec.NodeName)
		}
	}
	n.AllowedUnsafeSysctls = append(n.AllowedUnsafeSysctls, o.UnsafeSysctls...)
	if o.MaxPods > 0 {
		if n.Object.Status.Allocatable == nil {
			n.Object.Status.Allocatable = corev1.ResourceList{}
		}
		n.Object.Status.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(o.MaxPods, resource.DecimalSI)
	}
	return n, nil
}

// Engine is the engine's options on the runtime rt (Conn.Runtime; zero:
// none, as for plan).
func (o *Options) Engine(rt render.Runtime) steps.Options {
	endpoint, simulated := runtimeOf(rt)
	eo := steps.Options{Config: podcfg.Options{
		RootDir: o.RootDir, LogDir: o.LogDir, HugePageSizes: node.HugePageSizes(), Swap: node.SwapController(),
		ThermalThrottlePaths: node.ThermalThrottlePaths(),
		CgroupDriver:         o.CgroupDriver, CgroupsPerQOS: o.CgroupsPerQOS, CgroupRoot: o.CgroupRoot,
		ClusterDNS: o.ClusterDNS, ClusterDomain: o.ClusterDomain, Gates: o.Gates,
	}, PollInterval: o.PollInterval, InitTimeout: o.InitTimeout, Node: o.Node,
		MaxRestarts: o.MaxRestarts, BackoffScale: o.BackoffScale, Settle: o.Settle, WaitReady: o.WaitReady,
		ReadyTimeout: o.ReadyTimeout, CgroupDriverSet: o.CgroupDriverSet, Simulated: simulated, From: o.From, Runtime: endpoint}
	if o.GracePeriod >= 0 {
		gp := o.GracePeriod
		eo.GracePeriod = &gp
	}
	reg := o.CSIRegistryDir
	if reg == "" {
		reg = csi.DefaultRegistryDir
	}
	eo.CSI = &csi.Drivers{Endpoints: o.CSIEndpoints, RegistryDir: reg}
	o.clusterEngine(&eo)
	return eo
}
