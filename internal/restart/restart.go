package restart

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/gate"
)

// Decision is what the kubelet decides about one exit, and why in words.
type Decision struct {
	// Restart: the container is started again.
	Restart bool
	// RestartAll: a rule with action RestartAllContainers matched (and its
	// gate is on): every container of the pod is to be restarted.
	RestartAll bool
	// Why says which rule or policy decided, e.g.
	// `restartPolicyRules[0] (exit code In [42]): Restart`.
	Why string
}

// MatchingRule mirrors FindMatchingContainerRestartRule
// (pkg/api/v1/pod/util.go): the first of c's restartPolicyRules whose
// exitCodes match code, and its index; -1 when none matches.
func MatchingRule(c *corev1.Container, code int32) (corev1.ContainerRestartRule, int) {
	for i, r := range c.RestartPolicyRules {
		if r.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range r.ExitCodes.Values {
			if v == code {
				in = true
			}
		}
		switch r.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return r, i
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return r, i
			}
		}
	}
	return corev1.ContainerRestartRule{}, -1
}

// Decide mirrors ContainerShouldRestart (pkg/api/v1/pod/util.go), which
// ShouldContainerBeRestarted (pkg/kubelet/container/helpers.go) calls for an
// exited container when ContainerRestartRules is on: a container-level
// restartPolicy makes its rules count, first match wins (Restart restarts;
// RestartAllContainers restarts every container when its gate is on, else
// falls back); then the container's restartPolicy; then the pod's. With
// ContainerRestartRules off (the API server dropped the container fields) it
// is the pod's restartPolicy alone, as ShouldContainerBeRestarted had it.
func Decide(c *corev1.Container, spec *corev1.PodSpec, code int32, g gate.Gates) Decision {
	if c.RestartPolicy != nil && g.Enabled(gate.ContainerRestartRules) {
		if r, i := MatchingRule(c, code); i >= 0 {
			rule := fmt.Sprintf("restartPolicyRules[%d] (exit code %s %s)", i, r.ExitCodes.Operator, values(r.ExitCodes.Values))
			switch r.Action {
			case corev1.ContainerRestartRuleActionRestart:
				return Decision{Restart: true, Why: rule + ": Restart"}
			case corev1.ContainerRestartRuleActionRestartAllContainers:
				if g.Enabled(gate.RestartAllContainersOnContainerExits) {
					return Decision{Restart: true, RestartAll: true, Why: rule + ": RestartAllContainers"}
				}
			}
		}
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return Decision{Restart: true, Why: "container restartPolicy Always"}
		case corev1.ContainerRestartPolicyOnFailure:
			return Decision{Restart: code != 0, Why: "container restartPolicy OnFailure"}
		case corev1.ContainerRestartPolicyNever:
			return Decision{Why: "container restartPolicy Never"}
		}
	}
	why := "restartPolicy " + string(spec.RestartPolicy)
	switch spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure:
		return Decision{Restart: code != 0, Why: why}
	case corev1.RestartPolicyNever:
		return Decision{Why: why}
	}
	return Decision{Restart: true, Why: "restartPolicy Always"}
}

// Restartable mirrors IsContainerRestartable (pkg/api/v1/pod/util.go): can
// the container be restarted at all (a Restart rule, a container policy
// other than Never, else a pod policy other than Never).
func Restartable(c *corev1.Container, spec *corev1.PodSpec, g gate.Gates) bool {
	if c.RestartPolicy != nil && g.Enabled(gate.ContainerRestartRules) {
		for _, r := range c.RestartPolicyRules {
			if r.Action == corev1.ContainerRestartRuleActionRestart {
				return true
			}
		}
		return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != corev1.RestartPolicyNever
}

// AnyRestartAll mirrors AllContainersCouldRestart (pkg/api/v1/pod/util.go):
// some container has a RestartAllContainers rule, so the kubelet adds the
// AllContainersRestarting condition to the pod's status.
func AnyRestartAll(spec *corev1.PodSpec, g gate.Gates) bool {
	if !g.Enabled(gate.RestartAllContainersOnContainerExits) || !g.Enabled(gate.ContainerRestartRules) {
		return false
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			for _, r := range c.RestartPolicyRules {
				if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

func values(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
