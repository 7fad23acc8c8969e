package podcfg

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Label and annotation keys the kubelet puts on sandboxes and containers
// (k8s.io/kubelet/pkg/types, pkg/kubelet/types, kuberuntime/labels.go).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationConfigHash   = "kubernetes.io/config.hash"
	AnnotationConfigSeen   = "kubernetes.io/config.seen"
	AnnotationConfigSource = "kubernetes.io/config.source"

	annContainerHash          = "io.kubernetes.container.hash"
	annRestartCount           = "io.kubernetes.container.restartCount"
	annTerminationMsgPath     = "io.kubernetes.container.terminationMessagePath"
	annTerminationMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	annPreStopHandler         = "io.kubernetes.container.preStopHandler"
	annContainerPorts         = "io.kubernetes.container.ports"
	annPodTerminationGrace    = "io.kubernetes.pod.terminationGracePeriod"
	annPodDeletionGracePeriod = "io.kubernetes.pod.deletionGracePeriod"
)

// SandboxConfig builds the PodSandboxConfig the kubelet sends with
// RunPodSandbox, mirroring kuberuntime_sandbox.go generatePodSandboxConfig,
// generatePodSandboxLinuxConfig and kuberuntime_sandbox_linux.go
// applySandboxResources. The warnings are the events the kubelet records while
// building it (MissingClusterDNS, DNSConfigForming).
//
// The kubelet renames static pods "<pod>-<node>"; podstep does not, so the
// metadata name, the io.kubernetes.pod.name label and the log directory use
// pod.Name as is.
func SandboxConfig(pod *corev1.Pod, attempt uint32, o Options) (*runtimeapi.PodSandboxConfig, []Warning, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:      podLabels(pod, o),
		Annotations: PodAnnotations(pod, o),
	}
	dns, warnings, err := podDNS(pod, o)
	if err != nil {
		return nil, nil, err
	}
	cfg.DnsConfig = dns
	if !pod.Spec.HostNetwork {
		// For hostNetwork pods the kubelet leaves hostname empty: the sandbox
		// shares the node's UTS namespace, so the runtime uses the node's name.
		host, domain, err := podHostnameAndDomain(pod, o.ClusterDomain)
		if err != nil {
			return nil, nil, err
		}
		if host, err = nodenameForKernel(host, domain, pod.Spec.SetHostnameAsFQDN); err != nil {
			return nil, nil, err
		}
		cfg.Hostname = host
	}
	cfg.LogDirectory = SandboxLogDir(pod, o)
	cfg.PortMappings = portMappings(pod)

	ns, err := namespaceOptions(pod, o)
	if err != nil {
		return nil, nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: ns,
		Privileged:       hasPrivilegedContainer(pod),
		// The kubelet forces runtime/default on the sandbox (issue #84623);
		// RuntimeDefault is enum 0, hence "seccomp": {} in the trace.
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	sysctls := map[string]string{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		for _, s := range psc.Sysctls {
			sysctls[s.Name] = s.Value
		}
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.SupplementalGroupsPolicy != nil {
			p, err := supplementalGroupsPolicy(*psc.SupplementalGroupsPolicy)
			if err != nil {
				return nil, nil, err
			}
			sc.SupplementalGroupsPolicy = p
		}
		sc.SelinuxOptions = seLinuxOption(psc.SELinuxOptions)
	}
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    CgroupParent(pod, o),
		SecurityContext: sc,
		Sysctls:         sysctls,
		Resources:       sandboxResources(pod),
		Overhead:        overheadResources(pod),
	}
	return cfg, warnings, nil
}

// SandboxLogDir is the pod's log directory <LogDir>/<ns>_<name>_<uid>, like
// kuberuntime_manager.go BuildPodLogsDirectory.
func SandboxLogDir(pod *corev1.Pod, o Options) string {
	return filepath.Join(o.logDir(), strings.Join([]string{pod.Namespace, pod.Name, string(pod.UID)}, "_"))
}

// CgroupParent is the pod's cgroup as the kubelet names it for the runtime
// (kubelet_pods.go GetPodCgroupParent → pod_container_manager_linux.go
// GetPodContainerName → cgroup_manager_linux.go Name): "" without
// cgroupsPerQOS; cgroupfs "/kubepods/besteffort/pod<uid>",
// "/kubepods/burstable/pod<uid>", "/kubepods/pod<uid>" (Guaranteed); systemd
// "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid with _>.slice".
func CgroupParent(pod *corev1.Pod, o Options) string {
	if !o.CgroupsPerQOS {
		return ""
	}
	var name []string
	for _, p := range strings.Split(o.CgroupRoot, "/") {
		if p != "" {
			name = append(name, p)
		}
	}
	name = append(name, "kubepods")
	switch QOSClass(pod) {
	case corev1.PodQOSBurstable:
		name = append(name, "burstable")
	case corev1.PodQOSBestEffort:
		name = append(name, "besteffort")
	}
	name = append(name, "pod"+string(pod.UID))
	if o.CgroupDriver == "systemd" {
		return systemdName(name)
	}
	return "/" + path.Join(name...)
}

// systemdName mirrors CgroupName.ToSystemd: escape "-" as "_" in each part,
// join with "-", and expand the slice into its parent slices.
func systemdName(parts []string) string {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = strings.ReplaceAll(p, "-", "_")
	}
	var b strings.Builder
	prefix := ""
	for _, p := range esc {
		b.WriteString("/" + prefix + p + ".slice")
		prefix += p + "-"
	}
	return b.String()
}

func podLabels(pod *corev1.Pod, o Options) map[string]string {
	l := map[string]string{}
	for k, v := range pod.Labels {
		l[k] = v
	}
	for k, v := range o.ExtraLabels {
		l[k] = v
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

// The kubelet's config sources (kubetypes.FileSource, ApiserverSource,
// pkg/kubelet/types/pod_update.go), as kubernetes.io/config.source says them.
const (
	SourceFile = "file"
	SourceAPI  = "api"
)

// PodAnnotations are the pod's annotations as the kubelet holds them: the
// manifest's plus what its config source adds (pkg/kubelet/config): every
// source config.seen and config.source; the file source of a static pod
// also config.hash, the UID (applyDefaults, config/common.go), which the
// API server source does not set (o.Source SourceAPI). The sandbox config,
// the downward API and the image manager's ImageSpec carry them.
func PodAnnotations(pod *corev1.Pod, o Options) map[string]string {
	a := map[string]string{}
	for k, v := range pod.Annotations {
		a[k] = v
	}
	seen := o.Seen
	if seen.IsZero() {
		seen = time.Now()
	}
	a[AnnotationConfigSeen] = seen.UTC().Format(time.RFC3339Nano)
	if o.Source == SourceAPI {
		a[AnnotationConfigSource] = SourceAPI
		return a
	}
	a[AnnotationConfigHash] = string(pod.UID)
	a[AnnotationConfigSource] = SourceFile
	return a
}

// podHostnameAndDomain mirrors kubelet_pods.go GeneratePodHostNameAndDomain.
func podHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (string, string, error) {
	if pod.Spec.HostnameOverride != nil && *pod.Spec.HostnameOverride != "" {
		return *pod.Spec.HostnameOverride, "", nil
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	const hostnameMaxLen = 63
	if len(hostname) > hostnameMaxLen {
		t := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
		if t == "" {
			return "", "", fmt.Errorf("hostname for pod %q was invalid: %q", pod.Name, hostname)
		}
		hostname = t
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// nodenameForKernel mirrors kuberuntime/util GetNodenameForKernel
// (setHostnameAsFQDN).
func nodenameForKernel(host, domain string, asFQDN *bool) (string, error) {
	const fqdnMaxLen = 64
	if domain == "" || asFQDN == nil || !*asFQDN {
		return host, nil
	}
	fqdn := host + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// portMappings mirrors container/helpers.go MakePortMappings over the regular
// containers: every declared port (host_port 0 when none), duplicates by name
// (or by family/protocol/hostIP/ports) dropped.
func portMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range pod.Spec.Containers[i].Ports {
			family := "any"
			if p.HostIP != "" {
				family = "v4"
				if strings.Contains(p.HostIP, ":") {
					family = "v6"
				}
			}
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      runtimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func runtimeProtocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// namespaceOptions mirrors kuberuntime/util NamespacesForPod: network/ipc NODE
// for hostNetwork/hostIPC else POD; pid NODE for hostPID, POD with
// shareProcessNamespace, else CONTAINER; the user namespace as userNamespace
// says (NODE, or POD with the pod's mappings for hostUsers: false).
func namespaceOptions(pod *corev1.Pod, o Options) (*runtimeapi.NamespaceOption, error) {
	userns, err := userNamespace(pod, o)
	if err != nil {
		return nil, err
	}
	ns := &runtimeapi.NamespaceOption{
		Network:       runtimeapi.NamespaceMode_POD,
		Ipc:           runtimeapi.NamespaceMode_POD,
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		UsernsOptions: userns,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns, nil
}

func hasPrivilegedContainer(pod *corev1.Pod) bool {
	priv := func(cs []corev1.Container) bool {
		for i := range cs {
			if sc := cs[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				return true
			}
		}
		return false
	}
	if priv(pod.Spec.InitContainers) || priv(pod.Spec.Containers) {
		return true
	}
	for i := range pod.Spec.EphemeralContainers {
		if sc := pod.Spec.EphemeralContainers[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			return true
		}
	}
	return false
}

func supplementalGroupsPolicy(p corev1.SupplementalGroupsPolicy) (runtimeapi.SupplementalGroupsPolicy, error) {
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(p)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", string(p))
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

func seLinuxOption(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}
