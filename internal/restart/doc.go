// Package restart decides, as the kubelet v1.37 does, whether a container
// that exited is restarted: the container's restartPolicyRules, then its
// restartPolicy, then the pod's restartPolicy (KEP-5307, feature gate
// ContainerRestartRules, beta and on by default in v1.37), and whether a
// RestartAllContainers rule matched (RestartAllContainersOnContainerExits).
//
// The engine (internal/steps) uses it for its restart decisions and
// internal/podstate for the pod's phase, so both always agree.
package restart
