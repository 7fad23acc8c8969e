package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/session"
)

// Labels and annotations on every object a fleet makes.
const (
	// LabelFleet is on every object of a fleet (the parent included): its
	// value is the fleet's id. `podstep fleet cleanup` deletes by it.
	LabelFleet = "podstep.dev/fleet"
	// LabelRole says what the object is: parent, manifest or runner.
	LabelRole = "podstep.dev/fleet-role"
	// AnnotationNode names the node a runner or manifest is for (node
	// names can be longer than a label value).
	AnnotationNode = "podstep.dev/fleet-node"
	// AnnotationReplayEndpoint, on a Node, names a runtime on that node
	// that no kubelet watches (unix:///ABSOLUTE/PATH, set up by an
	// operator for podstep): the node's runner replays there instead of on
	// the kubelet's runtime, whose kubelet stops pods it does not know
	// (HandlePodCleanups; docs/fleet.md).
	AnnotationReplayEndpoint = "podstep.dev/replay-endpoint"
)

// Where a runner's runtime endpoint came from (Result.EndpointFrom).
const (
	// FromFlag: -r/--runtime-endpoint, for every node.
	FromFlag = "flag"
	// FromAnnotation: the node's podstep.dev/replay-endpoint annotation.
	FromAnnotation = "annotation"
	// FromConfigz: the node's kubelet's containerRuntimeEndpoint (configz):
	// the kubelet's own runtime.
	FromConfigz = "configz"
	// FromDefault: configz did not say; DefaultEndpoint, likely the
	// kubelet's own runtime too.
	FromDefault = "default"
)

// Roles of the objects.
const (
	RoleParent   = "parent"
	RoleManifest = "manifest"
	RoleRunner   = "runner"
)

// Paths inside the runner.
const (
	manifestMount = "/etc/podstep-fleet"
	podFile       = "pod.yaml"
	nodeFile      = "node.yaml"
)

// Defaults of the runner.
const (
	// DefaultHostDir holds each node's podstep root and log dirs on the
	// node's host: HostDir/<node>/root and HostDir/<node>/logs, so that
	// nodes sharing a host (kind, the test cluster) never share a dir.
	DefaultHostDir = "/var/lib/podstep-fleet"
	// DefaultServiceAccount is the runner's service account (deploy/).
	DefaultServiceAccount = "podstep-fleet-runner"
	// DefaultNamespace is where the runners and their ConfigMaps go.
	DefaultNamespace = "podstep-fleet"
	// DefaultEndpoint is the runtime endpoint when a node's configz does
	// not say (the kubelet's default since v1.27 has no default: containerd's).
	DefaultEndpoint = "unix:///run/containerd/containerd.sock"
)

// Runner describes one node's runner: what Objects makes.
type Runner struct {
	// Fleet is the fleet's id; Parent the parent ConfigMap (its name and
	// UID for the ownerReferences).
	Fleet     string
	Parent    *corev1.ConfigMap
	Namespace string
	Node      *corev1.Node
	// Config is the node's kubelet configuration (nil: configz did not
	// answer; the defaults and the fleet's flags are used).
	Config *cluster.NodeConfig
	// Pod is the pod to replay (Secrets never included; see Manifest).
	Pod *corev1.Pod
	// ConfigMaps the manifest carries along (never Secrets).
	ConfigMaps     []*corev1.ConfigMap
	Image          string
	PullPolicy     corev1.PullPolicy
	ServiceAccount string
	HostDir        string
	// Endpoint overrides the runtime endpoint of configz.
	Endpoint string
	// ReplayEndpoint is the node's podstep.dev/replay-endpoint annotation
	// (checked by ReplayEndpoint): it overrides configz, Endpoint overrides it.
	ReplayEndpoint string
	// Shadow is the fleet's --shadow (session.ShadowAuto, ...; "": auto);
	// the runner's own is ShadowMode.
	Shadow string
	// RunArgs are extra flags for `podstep run` (after the fleet's own).
	RunArgs []string
	// APIServer is the API server URL the runner reads the pod's Secrets,
	// ConfigMaps and tokens from ("": the in-cluster kubernetes Service,
	// KUBERNETES_SERVICE_HOST/PORT as the kubelet sets them).
	APIServer string
}

// names of a node's objects: the fleet id and a hash of the node name
// (node names reach 253 characters; object names must stay short).
func (r *Runner) name() string {
	h := sha256.Sum256([]byte(r.Node.Name))
	return "podstep-fleet-" + r.Fleet + "-" + hex.EncodeToString(h[:4])
}

// PodUID is the replayed pod's UID on node: one per fleet and node, so
// that pod dirs, cgroups and sandbox names (NAME_NS_UID_ATTEMPT) of
// nodes that share a host or a runtime never collide.
func PodUID(fleet, node string) types.UID {
	h := sha256.Sum256([]byte("podstep-fleet/" + fleet + "/" + node))
	x := hex.EncodeToString(h[:16])
	// a version-4-shaped UUID, as the API server's are
	return types.UID(x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32])
}

// endpoint is the runtime endpoint the runner talks to, and where it
// came from (FromFlag, FromAnnotation, FromConfigz, FromDefault).
func (r *Runner) endpoint() (string, string) {
	switch {
	case r.Endpoint != "":
		return r.Endpoint, FromFlag
	case r.ReplayEndpoint != "":
		return r.ReplayEndpoint, FromAnnotation
	case r.Config != nil && r.Config.ContainerRuntimeEndpoint != "":
		return r.Config.ContainerRuntimeEndpoint, FromConfigz
	}
	return DefaultEndpoint, FromDefault
}

// ShadowMode is the runner's `podstep run --shadow`: the fleet's on the
// kubelet's runtime (configz, default: auto shadows it when a kubelet's
// sandbox is on it, as the runner's own always is); on -r's or the node's
// replay-endpoint runtime, which the operator chose, never unless the
// fleet's is always.
func (r *Runner) ShadowMode() string {
	mode := r.Shadow
	if mode == "" {
		mode = session.ShadowAuto
	}
	if _, from := r.endpoint(); (from == FromFlag || from == FromAnnotation) && mode != session.ShadowAlways {
		return session.ShadowNever
	}
	return mode
}

// imageEndpoint is configz's image service endpoint, only when the runner
// replays on configz's runtime ("" otherwise: the runtime's own).
func (r *Runner) imageEndpoint() string {
	if _, from := r.endpoint(); from == FromConfigz && r.Config.ImageServiceEndpoint != "" {
		return r.Config.ImageServiceEndpoint
	}
	return ""
}

// ReplayEndpoint reads and checks a node's podstep.dev/replay-endpoint
// annotation ("" when it has none). The runner mounts the socket from the
// node's host, so it must be unix:// with an absolute path.
func ReplayEndpoint(n *corev1.Node) (string, error) {
	v, ok := n.Annotations[AnnotationReplayEndpoint]
	if !ok {
		return "", nil
	}
	if socketPath(v) == "" {
		return "", fmt.Errorf("node %s: annotation %s=%q: expected unix:///ABSOLUTE/PATH of a runtime socket on the node",
			Clean(n.Name), AnnotationReplayEndpoint, Clean(v))
	}
	return v, nil
}

// hostDir is the node's own dir on its host.
func (r *Runner) hostDir() string {
	return path.Join(r.HostDir, safeName(r.Node.Name))
}

// safeName keeps letters, digits, '.', '-', '_' of a node name.
func safeName(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, s)
}

// owner is the ownerReference to the parent every object carries.
func (r *Runner) owner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: r.Parent.Name, UID: r.Parent.UID}}
}

func (r *Runner) meta(role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: r.name(), Namespace: r.Namespace,
		Labels:          map[string]string{LabelFleet: r.Fleet, LabelRole: role},
		Annotations:     map[string]string{AnnotationNode: r.Node.Name},
		OwnerReferences: r.owner()}
}

// Manifest returns the ConfigMap holding the runner's manifest: the pod,
// with its own UID and spec.nodeName, and the ConfigMaps it carries, and
// the Node object. Secrets are never in it: the runner reads them from
// the API server with its service account.
func (r *Runner) Manifest() (*corev1.ConfigMap, error) {
	pod := r.Pod.DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.UID = PodUID(r.Fleet, r.Node.Name)
	pod.Spec.NodeName = r.Node.Name
	docs := []any{pod}
	for _, cm := range r.ConfigMaps {
		c := cm.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		docs = append(docs, c)
	}
	var sb strings.Builder
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("runner manifest for node %s: %w", r.Node.Name, err)
		}
		if i > 0 {
			sb.WriteString("---\n")
		}
		sb.Write(b)
	}
	node := r.Node.DeepCopy()
	node.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	node.ManagedFields = nil
	nb, err := yaml.Marshal(node)
	if err != nil {
		return nil, fmt.Errorf("runner manifest for node %s: %w", r.Node.Name, err)
	}
	return &corev1.ConfigMap{ObjectMeta: r.meta(RoleManifest),
		Data: map[string]string{podFile: sb.String(), nodeFile: string(nb)}}, nil
}

// Args are the runner's `podstep run` arguments: the node's runtime,
// dirs and kubelet settings.
func (r *Runner) Args() []string {
	dir := r.hostDir()
	ep, _ := r.endpoint()
	// --in-cluster: the runner reads what the pod references (Secrets,
	// ConfigMaps, tokens) from the API server with its own service account,
	// as the node's kubelet would with its node's credentials; none of it is
	// in the manifest ConfigMap.
	args := []string{"run", "--auto", "-o", "json", "--no-color", "--in-cluster",
		"-f", path.Join(manifestMount, podFile), "--node", path.Join(manifestMount, nodeFile),
		"-r", ep,
		"--root-dir", path.Join(dir, "root"), "--log-dir", path.Join(dir, "logs"),
		// at its end, the runner removes its dirs: the kubelet never removes a
		// hostPath volume's dirs (RemoveHostDirs)
		"--fleet-host-dir", r.HostDir,
		// a shadow runtime, started in the host's mount namespace under
		// HOST_DIR/shadows (session's shadowFlags)
		"--shadow", r.ShadowMode()}
	if ie := r.imageEndpoint(); ie != "" && ie != ep {
		args = append(args, "--image-endpoint", ie)
	}
	if c := r.Config; c != nil {
		if c.CgroupDriver == "systemd" || c.CgroupDriver == "cgroupfs" {
			args = append(args, "--cgroup-driver", c.CgroupDriver)
		}
		if len(c.ClusterDNS) > 0 {
			args = append(args, "--cluster-dns", strings.Join(c.ClusterDNS, ","))
		}
		if c.ClusterDomain != "" {
			args = append(args, "--cluster-domain", c.ClusterDomain)
		}
		if c.MaxPods > 0 {
			args = append(args, "--max-pods", strconv.FormatInt(c.MaxPods, 10))
		}
		if len(c.AllowedUnsafeSysctls) > 0 {
			args = append(args, "--allowed-unsafe-sysctls", strings.Join(c.AllowedUnsafeSysctls, ","))
		}
		if g := c.KnownGates(); g != "" {
			args = append(args, "--feature-gates", g)
		}
		if c.CgroupRoot != "" {
			args = append(args, "--cgroup-root", c.CgroupRoot)
		}
		// The kubelet's pod cgroup (cgroupRoot/kubepods/<qos>/pod<UID>) only
		// on the kubelet's own runtime: there the kubelet sends exactly that
		// cgroup parent. Beside a replay runtime the pod would be an orphan
		// in the kubelet's kubepods tree, whose processes its housekeeping
		// kills (cleanupOrphanedPodCgroups, pkg/kubelet/kubelet_pods.go).
		if _, from := r.endpoint(); c.CgroupsPerQOS != nil && *c.CgroupsPerQOS && (from == FromConfigz || from == FromDefault) {
			args = append(args, "--cgroups-per-qos")
		}
	}
	return append(args, r.RunArgs...)
}

// socketPath is the host path of a unix:// endpoint ("" for others).
func socketPath(ep string) string {
	p, ok := strings.CutPrefix(ep, "unix://")
	if !ok || !strings.HasPrefix(p, "/") {
		return ""
	}
	return path.Clean(p)
}

// RunnerPod is the runner: pinned to the node with spec.nodeName (no
// scheduler, as `kubectl debug node` does), tolerating every taint,
// privileged, in the host's network, PID and IPC namespaces (as kubectl
// debug node's pods are: the replayed pod's IPs and processes are the
// host's), with the node's runtime socket and the host dir (its root and
// log dirs are HostDir/NODE/root and /logs) as hostPaths at the same
// paths, the host dir mounted Bidirectional so that the mounts podstep
// makes for volumes reach the runtime (as CSI node plugins do).
func (r *Runner) RunnerPod(manifest *corev1.ConfigMap) *corev1.Pod {
	bidi := corev1.MountPropagationBidirectional
	dirType := corev1.HostPathDirectoryOrCreate
	sockType := corev1.HostPathSocket
	t := true
	var zero int64
	vols := []corev1.Volume{
		{Name: "manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: manifest.Name}}}},
		// the host dir, not the node's dirs under it: those the runner's
		// podstep makes and removes (--fleet-host-dir), plain dirs in here;
		// the kubelet would leave a hostPath's own dir behind
		{Name: "host-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: r.HostDir, Type: &dirType}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "manifest", MountPath: manifestMount, ReadOnly: true},
		{Name: "host-dir", MountPath: r.HostDir, MountPropagation: &bidi},
	}
	seen := map[string]bool{}
	runtimeEP, _ := r.endpoint()
	for i, ep := range []string{runtimeEP, r.imageEndpoint()} {
		p := socketPath(ep)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		name := "runtime-socket-" + strconv.Itoa(i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &sockType}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: p})
	}
	pullPolicy := r.PullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	// Enough for podstep's teardown after SIGTERM (each StopContainer
	// waits the pod's grace period).
	grace := int64(60)
	if g := r.Pod.Spec.TerminationGracePeriodSeconds; g != nil && *g+30 > grace {
		grace = *g + 30
	}
	return &corev1.Pod{
		ObjectMeta: r.meta(RoleRunner),
		Spec: corev1.PodSpec{
			NodeName:                      r.Node.Name,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            r.ServiceAccount,
			HostNetwork:                   true,
			HostPID:                       true,
			HostIPC:                       true,
			DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            new(bool),
			AutomountServiceAccountToken:  &t,
			Volumes:                       vols,
			Containers: []corev1.Container{{
				Name:            "podstep",
				Image:           r.Image,
				ImagePullPolicy: pullPolicy,
				Command:         []string{"/usr/local/bin/podstep"},
				Args:            r.Args(),
				Env:             serverEnv(r.APIServer),
				VolumeMounts:    mounts,
				SecurityContext: &corev1.SecurityContext{Privileged: &t, RunAsUser: &zero},
				// Only the last message on failure: the log says the rest.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// serverEnv points the runner's in-cluster config at server (an https URL
// checked by CheckAPIServer): KUBERNETES_SERVICE_HOST and _PORT, which
// rest.InClusterConfig reads; a container's own env wins over the
// kubelet's service variables (makeEnvironmentVariables, kubelet_pods.go).
// nil for "": the kubernetes Service's, as the kubelet sets them.
func serverEnv(server string) []corev1.EnvVar {
	u, err := url.Parse(server)
	if server == "" || err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: u.Hostname()}, {Name: "KUBERNETES_SERVICE_PORT", Value: port}}
}

// CheckAPIServer checks --runner-server: "" or https://HOST[:PORT], which
// is what an in-cluster config can reach.
func CheckAPIServer(server string) error {
	if server == "" {
		return nil
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return fmt.Errorf("--runner-server %q: expected https://HOST[:PORT], the API server as the runners on the nodes reach it", server)
	}
	return nil
}
