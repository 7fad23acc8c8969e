package podcfg

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
)

// Options are the node/kubelet settings that shape the configs. They stand for
// the kubelet's flags and config file (--root-dir, podLogsDir,
// --cgroup-driver, --cgroups-per-qos, --cgroup-root,
// --cluster-dns, --cluster-domain, --resolv-conf), its Node object and what
// it reads of the machine.
type Options struct {
	// QOS is the pod's QoS class when the caller worked it out once
	// (QOSClass; the engine does, in steps.New): "" computes it for each
	// container's config, a walk of every container, which for every
	// container made a pod's configs quadratic in its containers.
	QOS corev1.PodQOSClass
	// Node is the node the kubelet runs as (kl.getNodeAnyWay; podstep's
	// engine sets it from steps.Options.Node): its name is spec.nodeName of
	// a pod without one; status.allocatable gives the downward API's
	// default limits (defaultPodLimitsForDownwardAPI); the memory of
	// status.capacity (else of allocatable) is the machine's memory capacity
	// a Burstable container's oom_score_adj is computed against. nil: a
	// node without a name or resources.
	Node *corev1.Node
	// HugePageSizes are the machine's huge page sizes in bytes, in
	// libcontainer's order (node.HugePageSizes reads them); the kubelet
	// sends a hugepage_limits entry for each.
	HugePageSizes []int64
	// ThermalThrottlePaths are the machine's
	// /sys/devices/system/cpu/cpuN/thermal_throttle dirs
	// (node.ThermalThrottlePaths reads them): the kubelet masks them in every
	// container whose procMount is not Unmasked (defaultMaskedPaths).
	ThermalThrottlePaths []string
	// Swap is the machine's swap controller (node.SwapController reads
	// it); it decides the containers' swap limits (configureSwap).
	Swap SwapController

	RootDir       string            // kubelet root dir (pods/<uid>/... lives here)
	LogDir        string            // pod logs root, e.g. /var/log/pods
	CgroupDriver  string            // "cgroupfs" or "systemd"
	CgroupsPerQOS bool              // when false, cgroup_parent is empty (as in the simple trace)
	CgroupRoot    string            // default "/"
	ClusterDNS    []string          // kubelet --cluster-dns
	ClusterDomain string            // kubelet --cluster-domain
	ResolvConf    string            // host resolv.conf path, default /etc/resolv.conf
	ExtraLabels   map[string]string // added to sandbox and container labels (podstep adds "podstep.dev/managed": "true")
	Seen          time.Time         // kubernetes.io/config.seen; the zero time means now
	// Source is the kubelet's config source the pod came from
	// (kubernetes.io/config.source): "" or SourceFile for a manifest (a
	// static pod's), SourceAPI for a pod read from the API server (--pod).
	Source string
	// UserNamespace is the pod's user namespace (mode POD and its uid/gid
	// mappings) for a pod with hostUsers: false, as the kubelet's userns
	// manager allocated it; the caller allocates it (FirstFreeUserNamespace).
	// Unused for other pods.
	UserNamespace *runtimeapi.UserNamespace
	// Gates are the kubelet's feature gates (v1.37 defaults unless
	// --feature-gates changed them).
	Gates gate.Gates
}

func (o Options) nodeName() string {
	if o.Node == nil {
		return ""
	}
	return o.Node.Name
}

// nodeAllocatable is the node's status.allocatable (nil without a node).
func (o Options) nodeAllocatable() corev1.ResourceList {
	if o.Node == nil {
		return nil
	}
	return o.Node.Status.Allocatable
}

// nodeMemoryCapacity is the node's memory capacity in bytes, or its
// allocatable memory when it lists no capacity (0 without a node).
func (o Options) nodeMemoryCapacity() int64 {
	if o.Node == nil {
		return 0
	}
	if q, ok := o.Node.Status.Capacity[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	return o.Node.Status.Allocatable.Memory().Value()
}

func (o Options) logDir() string {
	if o.LogDir == "" {
		return "/var/log/pods"
	}
	return o.LogDir
}

func (o Options) rootDir() string {
	if o.RootDir == "" {
		return "/var/lib/kubelet"
	}
	return o.RootDir
}

func (o Options) resolvConf() string {
	if o.ResolvConf == "" {
		return "/etc/resolv.conf"
	}
	return o.ResolvConf
}

// Warning is a kubelet event the config generation records (e.g.
// MissingClusterDNS, DNSConfigForming), with the kubelet's reason and message.
type Warning struct{ Reason, Message string }

// ContainerInput is what the kubelet knows when it generates a container config
// (the arguments of generateContainerConfig plus what GenerateRunContainerOptions
// and getImageUser look up).
type ContainerInput struct {
	Container    *corev1.Container
	Init         bool // an init container (regular or sidecar); informational, the kubelet builds the same config
	RestartCount int  // metadata.attempt, log file <name>/<RestartCount>.log
	// ImageRef is the image ID from ImageStatus (sha256:...), sent as image.image.
	ImageRef string
	// ImageUser is the image's user from ImageStatus: a numeric uid or a user
	// name. "" means the image sets no user, which the kubelet treats as root
	// (uid 0, hence run_as_user {} in the trace).
	ImageUser string
	// ImageUserUnknown says the runtime could not tell the image's user
	// (the simulator, of an image whose config it cannot read): not "no
	// user, so root". verifyRunAsNonRoot then lets the container through
	// where only the image's user would decide (RunAsNonRootNeedsImageUser
	// says when, for the caller to label that verdict), and no run_as_user
	// comes from the image.
	ImageUserUnknown bool
	// PodIP / PodIPs are the sandbox's IPs (PodSandboxStatus). The kubelet
	// mounts /etc/hosts only when the pod has at least one IP.
	PodIP  string
	PodIPs []string
	// HostIPs are the node's IPs, the value of status.hostIP(s) in env
	// (podFieldSelectorRuntimeValue: getHostIPsAnyWay, the Node's
	// addresses, not the pod's status). Empty: the pod's status's.
	HostIPs []string
	// VolumeHostPaths maps a volume name to its host path (from the volumes stage).
	VolumeHostPaths map[string]string
	// TerminationLogPath is the host file for terminationMessagePath
	// (<root>/pods/<uid>/containers/<name>/<TerminationLogName()>), created by
	// the caller. "" means no termination-log mount.
	TerminationLogPath string
	// EtcHostsPath is <root>/pods/<uid>/etc-hosts, or "" when the caller does
	// not manage /etc/hosts (for a hostNetwork pod the file is a copy of the
	// node's /etc/hosts, mounted as the kubelet does: its pod IPs are the
	// node's).
	EtcHostsPath string
	// Env resolves configMap/secret references; may be nil (then every
	// reference is "not found").
	Env EnvSource
	// PrepareSubPath makes a volumeMount's subPath safe and returns the host
	// path to send, as makeMounts does through subpath.Interface
	// (SafeMakeDir, PrepareSafeSubpath: a bind mount under the pod dir's
	// volume-subpaths). Its error is the kubelet's message, returned as a
	// *ConfigError. nil sends <volume host path>/<subPath>.
	PrepareSubPath func(SubPath) (string, error)
	// ImageVolumes are the pod's image volumes the kubelet pulled, by
	// volume name (kubecontainer.ImageVolumes, from getImageVolumes): a
	// mount of one sends this ImageSpec and no host path.
	ImageVolumes map[string]*runtimeapi.ImageSpec
}

// SubPath is a volumeMount with a subPath, as makeMounts has it when it
// prepares the mount.
type SubPath struct {
	// Index is the volumeMount's index in the container's volumeMounts.
	Index int
	// Volume names the volume; VolumePath is its host path.
	Volume, VolumePath string
	// SubPath is subPath, or subPathExpr expanded, checked to be relative
	// and without "..".
	SubPath string
}

// EnvSource gives the ConfigMaps and Secrets the kubelet would get from its
// configmap/secret managers, and the Services its service lister has.
type EnvSource interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
	// ServiceList returns the Services whose env vars the kubelet adds
	// (getServiceEnvVarMap); nil without an API server.
	ServiceList() []*corev1.Service
}

// ConfigError is CreateContainerConfigError: a missing configmap/secret/key, a
// bad field reference, runAsNonRoot violations... Msg is the kubelet's message
// (the pod's container status message and the "Error: <Msg>" Failed event).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}
