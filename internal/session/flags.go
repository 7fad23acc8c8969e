package session

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/gate"
)

// AddPodFlags binds the pod flags run, plan and bench share; settle is
// --settle's default (bench's is 0: the relist is not creation).
func (o *Options) AddPodFlags(f *pflag.FlagSet, settle time.Duration) {
	f.StringVarP(&o.File, "filename", "f", "", "pod manifest (multi-document YAML: a Pod or a workload — Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob — plus its Secrets/ConfigMaps/Node; other kinds are skipped); - reads stdin")
	f.StringVar(&o.Select, "select", "", "KIND/NAME of the Pod or workload of -f to replay when the file has several, in kubectl's forms (deploy/web, sts/db, ds/agent, job/migrate, cj/backup, pod/web)")
	f.StringVar(&o.Scenario, "scenario", "", "a built-in scenario instead of -f: its manifest, and its feature gates unless --feature-gates is given (podstep scenarios lists them)")
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
	f.StringVar(&o.CgroupRoot, "cgroup-root", "", "kubelet --cgroup-root: the cgroup the kubepods tree is under, with --cgroups-per-qos (default: /)")
	o.CSIEndpoints = csi.Endpoints{}
	f.Var(o.CSIEndpoints, "csi-endpoint", "a CSI driver's node socket, DRIVER=unix://PATH (repeatable): the volumes stage calls it for CSI volumes as the kubelet does (default: the drivers registered in --csi-registry)")
	f.StringVar(&o.CSIRegistryDir, "csi-registry", csi.DefaultRegistryDir, "the kubelet's plugin registration dir (<kubelet root-dir>/plugins_registry): a CSI driver without --csi-endpoint is found there, as the kubelet finds it (GetInfo on each registration socket)")
}

// AllowExecPluginsFlag and AllowExecPluginsUsage are the flag every
// command taking --kubeconfig has (run, plan, proxy, fleet).
const (
	AllowExecPluginsFlag  = "allow-exec-plugins"
	AllowExecPluginsUsage = "run the kubeconfig's exec credential plugin even when the kubeconfig file (--kubeconfig, $KUBECONFIG, ~/.kube/config) is owned by another user or writable by group or others (refused otherwise: that user could make podstep run any command as you)"
)

// AddClusterFlags binds the flags that read the pod, or what a manifest
// references, from an API server (internal/cluster; docs/cluster.md).
func (o *Options) AddClusterFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Pod, "pod", "", "a pod of the cluster, [NAMESPACE/]NAME, or one of a workload's, [NAMESPACE/]KIND/NAME (deploy/web, sts/db, ds/agent, job/migrate, cj/nightly: the pod kubectl logs KIND/NAME picks): read it and what the kubelet fetches for it (ConfigMaps, Secrets, tokens, its Node) from the API server")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file, as kubectl's (default: $KUBECONFIG, else ~/.kube/config, else in-cluster); with -f, the manifest's references come from that cluster")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use (default: its current-context)")
	f.BoolVar(&o.AllowExecPlugins, AllowExecPluginsFlag, false, AllowExecPluginsUsage)
	f.BoolVar(&o.InCluster, "in-cluster", false, "read the pod's references from the API server of the pod podstep runs in, with its service account (a podstep fleet runner; no kubeconfig)")
}

// AddRunFlags binds the settings only `podstep run` has flags for (bench
// sets its own; plan runs nothing).
func (o *Options) AddRunFlags(f *pflag.FlagSet) {
	f.Int64Var(&o.GracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.StringSliceVar(&o.Breaks, "break", nil, "stop before these stages or steps in the TUI (e.g. sandbox,containers or start/app,create/*)")
	f.DurationVar(&o.PollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs (the kubelet's PLEG relists every 1s)")
	f.DurationVar(&o.InitTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.IntVar(&o.MaxRestarts, "max-restarts", 3, "restarts of one container (the kubelet's CrashLoopBackOff) before podstep gives up; -1: no limit, as the kubelet")
	f.Float64Var(&o.BackoffScale, "backoff-scale", 1, "multiply the kubelet's back-off delays (10s doubling to 5m) by this for the time podstep waits, e.g. 0.01 in CI")
	f.DurationVar(&o.ReadyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	f.StringVar(&o.FleetHostDir, "fleet-host-dir", "", "a podstep fleet runner's: the host dir --root-dir and --log-dir are under; at exit they and their parents up to it are removed when empty")
	_ = f.MarkHidden("fleet-host-dir")
}
