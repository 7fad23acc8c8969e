package manifest

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The checks of pkg/apis/core/validation (v1.37) for the pod features of
// kubelet v1.34–v1.37, as an API server with v1.37's default feature gates
// applies them (ContainerRestartRules, RestartAllContainersOnContainerExits,
// PodLevelResources, SupplementalGroupsPolicy, ProcMountType on). podstep
// also checks lifecycle.stopSignal whatever ContainerStopSignals says (alpha,
// off by default): an API server with the gate off would drop the field
// instead, and the kubelet then sends no stop signal, which the run says.

// restartPolicies are supportedContainerRestartPolicies.
var restartPolicies = []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}

// validateRestartRules mirrors validateContainerRestartPolicy (regular
// containers, and init containers through validateInitContainerRestartPolicy):
// restartPolicy Always, OnFailure or Never; restartPolicyRules need a
// restartPolicy, at most 20 of them, each with action Restart or
// RestartAllContainers and exitCodes (operator In or NotIn, at most 255
// values).
func validateRestartRules(c *corev1.Container, f string) *fieldErr {
	if c.RestartPolicy == nil {
		if len(c.RestartPolicyRules) > 0 {
			return fe(f+".restartPolicy", "required value: must specify restartPolicy when restart rules are used; expected %s", quoteAll(restartPolicies...))
		}
		return nil
	}
	if e := oneOf(f+".restartPolicy", *c.RestartPolicy, restartPolicies...); e != nil {
		return e
	}
	if n := len(c.RestartPolicyRules); n > 20 {
		return fe(f+".restartPolicyRules", "too many: %d rules; expected at most 20", n)
	}
	for i, r := range c.RestartPolicyRules {
		rf := fmt.Sprintf("%s.restartPolicyRules[%d]", f, i)
		if e := oneOf(rf+".action", r.Action, corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers); e != nil {
			return e
		}
		if r.ExitCodes == nil {
			return fe(rf+".exitCodes", "required value; expected exitCodes with an operator (In or NotIn) and values")
		}
		if e := oneOf(rf+".exitCodes.operator", r.ExitCodes.Operator, corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn); e != nil {
			return e
		}
		if n := len(r.ExitCodes.Values); n > 255 {
			return fe(rf+".exitCodes.values", "too many: %d values; expected at most 255", n)
		}
	}
	return nil
}

// stopSignalsLinux are supportedStopSignalsLinux; Windows takes SIGKILL
// and SIGTERM only.
var stopSignalsLinux = []corev1.Signal{
	"SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
	"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF",
	"SIGPWR", "SIGQUIT", "SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM", "SIGTRAP",
	"SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGWINCH",
	"SIGXCPU", "SIGXFSZ", "SIGRTMIN", "SIGRTMIN+1", "SIGRTMIN+2", "SIGRTMIN+3", "SIGRTMIN+4",
	"SIGRTMIN+5", "SIGRTMIN+6", "SIGRTMIN+7", "SIGRTMIN+8", "SIGRTMIN+9", "SIGRTMIN+10",
	"SIGRTMIN+11", "SIGRTMIN+12", "SIGRTMIN+13", "SIGRTMIN+14", "SIGRTMIN+15", "SIGRTMAX-14",
	"SIGRTMAX-13", "SIGRTMAX-12", "SIGRTMAX-11", "SIGRTMAX-10", "SIGRTMAX-9", "SIGRTMAX-8",
	"SIGRTMAX-7", "SIGRTMAX-6", "SIGRTMAX-5", "SIGRTMAX-4", "SIGRTMAX-3", "SIGRTMAX-2",
	"SIGRTMAX-1", "SIGRTMAX",
}

// validateStopSignal mirrors validateStopSignal: the pod must say its OS
// (spec.os.name), and the signal must be one that OS supports.
func validateStopSignal(c *corev1.Container, f string, os *corev1.PodOS) *fieldErr {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return nil
	}
	f += ".lifecycle.stopSignal"
	sig := *c.Lifecycle.StopSignal
	switch {
	case os == nil:
		return fe(f, "forbidden: may not be set for containers with empty `spec.os.name`; expected spec.os.name: linux (or windows) on the pod")
	case os.Name == corev1.Windows:
		return oneOf(f, sig, corev1.SIGKILL, corev1.SIGTERM)
	case os.Name == corev1.Linux && !slices.Contains(stopSignalsLinux, sig):
		return fe(f, "unsupported value %q; expected a Linux signal name such as \"SIGTERM\", \"SIGINT\", \"SIGUSR1\" or \"SIGRTMIN+1\"", string(sig))
	}
	return nil
}

// validateProcMount mirrors ValidateProcMountType and the hostUsers rule of
// validateContainerSecurityContext: Default or Unmasked, and Unmasked only
// in a user namespace (hostUsers: false).
func validateProcMount(sc *corev1.SecurityContext, f string, hostUsers bool) *fieldErr {
	if sc == nil || sc.ProcMount == nil {
		return nil
	}
	f += ".securityContext.procMount"
	if e := oneOf(f, *sc.ProcMount, corev1.DefaultProcMount, corev1.UnmaskedProcMount); e != nil {
		return e
	}
	if hostUsers && *sc.ProcMount == corev1.UnmaskedProcMount {
		return fe(f, "invalid value \"Unmasked\": `hostUsers` must be false to use `Unmasked`; expected spec.hostUsers: false, or procMount Default")
	}
	return nil
}

// validatePodLevelResources mirrors validatePodResources,
// validatePodResourceName and validatePodResourceConsistency: pod-level
// resources only on Linux pods, only cpu, memory and hugepages-*, pod-level
// requests at least the sum of the containers' requests, each container's
// limit at most the pod-level limit.
func validatePodLevelResources(s *corev1.PodSpec) *fieldErr {
	r := s.Resources
	if r == nil {
		return nil
	}
	if s.OS != nil && s.OS.Name == corev1.Windows {
		return fe("spec.resources", "forbidden: may not be set for a windows pod; expected no pod-level resources")
	}
	if len(r.Claims) > 0 {
		return fe("spec.resources.claims", "forbidden: claims may not be set for Resources at pod-level; expected container-level claims")
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, k := range slices.Sorted(maps.Keys(list.rl)) {
			if !resourcehelper.IsSupportedPodLevelResource(k) {
				return fe(fmt.Sprintf("spec.resources.%s[%s]", list.name, k), "unsupported resource name %q; expected \"cpu\", \"memory\" or \"hugepages-<size>\"", string(k))
			}
		}
	}
	if e := validateResources(r, "spec.resources"); e != nil {
		return e
	}
	pod := &corev1.Pod{Spec: *s}
	aggr := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, k := range slices.Sorted(maps.Keys(aggr)) {
		podReq, ok := r.Requests[k]
		if !ok {
			continue
		}
		if sum := aggr[k]; sum.Cmp(podReq) > 0 {
			return fe(fmt.Sprintf("spec.resources.requests[%s]", k), "invalid value %s: must be greater than or equal to aggregate container requests of %s; expected a pod-level request of at least %s", podReq.String(), sum.String(), sum.String())
		}
	}
	for i, c := range s.Containers {
		for _, k := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
			podLim, ok := r.Limits[k]
			if !ok {
				continue
			}
			if lim := c.Resources.Limits[k]; lim.Cmp(podLim) > 0 {
				return fe(fmt.Sprintf("spec.containers[%d].resources.limits[%s]", i, k), "invalid value %s: must be less than or equal to pod limits of %s; expected a container limit of at most %s", lim.String(), podLim.String(), podLim.String())
			}
		}
	}
	return nil
}

// validateSupplementalGroupsPolicy mirrors validateSupplementalGroupsPolicy.
func validateSupplementalGroupsPolicy(sc *corev1.PodSecurityContext) *fieldErr {
	if sc == nil || sc.SupplementalGroupsPolicy == nil {
		return nil
	}
	return oneOf("spec.securityContext.supplementalGroupsPolicy", *sc.SupplementalGroupsPolicy, corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)
}

// validatePodFeatures runs the checks above over the pod.
func validatePodFeatures(s *corev1.PodSpec) *fieldErr {
	if e := validateSupplementalGroupsPolicy(s.SecurityContext); e != nil {
		return e
	}
	if e := validatePodLevelResources(s); e != nil {
		return e
	}
	hostUsers := s.HostUsers == nil || *s.HostUsers
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range list.cs {
			c := &list.cs[i]
			f := fmt.Sprintf("spec.%s[%d]", list.name, i)
			if e := validateRestartRules(c, f); e != nil {
				return e
			}
			if e := validateStopSignal(c, f, s.OS); e != nil {
				return e
			}
			if e := validateProcMount(c.SecurityContext, f, hostUsers); e != nil {
				return e
			}
		}
	}
	return nil
}
