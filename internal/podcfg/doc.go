// Package podcfg builds the CRI (runtime v1) configs the kubelet builds when it
// creates a pod: the PodSandboxConfig sent with RunPodSandbox and the
// ContainerConfig sent with CreateContainer.
//
// Every exported function mirrors a kubelet function (v1.33–v1.37, checked
// field by field against real kubelet v1.37 CRI traces in
// testdata/*.yaml and the reference traces of the project):
//
//   - SandboxConfig      ↔ pkg/kubelet/kuberuntime/kuberuntime_sandbox.go generatePodSandboxConfig
//     (+ generatePodSandboxLinuxConfig, kuberuntime_sandbox_linux.go applySandboxResources)
//   - ContainerConfig    ↔ pkg/kubelet/kuberuntime/kuberuntime_container.go generateContainerConfig
//     (+ kuberuntime_container_linux.go generateLinuxContainerConfig, security_context.go
//     determineEffectiveSecurityContext, kubelet_pods.go makeEnvironmentVariables / makeMounts)
//   - QOSClass           ↔ pkg/apis/core/v1/helper/qos GetPodQOS
//   - ContainerHash      ↔ pkg/kubelet/container/helpers.go HashContainer
//   - TerminationLogName ↔ kuberuntime_container.go makeUID
//
// The code is written for podstep; it follows the kubelet's behaviour, not its
// source, and it does not import k8s.io/kubernetes. The downward API's field
// paths and resource values come from internal/fieldpath and $(VAR)
// expansion from internal/expansion, which volume and probe share. The node
// is an input (Options.Node, Options.HugePageSizes): podcfg reads nothing
// from the machine and keeps no package state.
//
// Known, deliberate differences from a real kubelet (docs/kubelet.md lists them):
//
//   - Static pods: the kubelet renames a static pod "<pod>-<node>" and derives
//     its UID from a hash of the manifest. podstep does NOT rename: the sandbox
//     metadata, io.kubernetes.pod.name label and log directory use the pod's own
//     name and the UID the manifest package assigned.
//   - Environment order: the kubelet collects env vars in a Go map and sends
//     them in map-iteration (random) order. podstep sends them in declaration
//     order (envFrom sources first, then env), which is stable.
//   - DNS options merged from pod.spec.dnsConfig come out of a map in the
//     kubelet too; podstep keeps the resolv.conf / first-seen order.
//   - Service variables (getServiceEnvVarMap) come from the EnvSource's
//     Services: run --pod reads them from the API server; a manifest has
//     none, so nothing is added (a kubelet without an API server adds
//     nothing either, as in the traces). podstep lists them by Service
//     name after the container's own; the kubelet's map has no order.
//   - Swap, MemoryQoS (unified), device plugins, CDI, image volumes, DRA and
//     user namespaces (hostUsers: false) are not modelled.
package podcfg
