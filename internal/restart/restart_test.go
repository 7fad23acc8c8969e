package restart

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/gate"
)

func policy(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }

func rule(a corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator, v ...int32) corev1.ContainerRestartRule {
	return corev1.ContainerRestartRule{Action: a, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: v}}
}

// TestDecide follows TestContainerShouldRestart (pkg/api/v1/pod/util_test.go):
// rules first, then the container's policy, then the pod's.
func TestDecide(t *testing.T) {
	off, _ := gate.Parse("ContainerRestartRules=false")
	noAll, _ := gate.Parse("RestartAllContainersOnContainerExits=false")
	for _, tc := range []struct {
		name         string
		podPolicy    corev1.RestartPolicy
		c            corev1.Container
		code         int32
		g            gate.Gates
		restart, all bool
		why          string
	}{
		{name: "pod Always", podPolicy: corev1.RestartPolicyAlways, code: 0, restart: true, why: "restartPolicy Always"},
		{name: "pod OnFailure exit 0", podPolicy: corev1.RestartPolicyOnFailure, code: 0, why: "restartPolicy OnFailure"},
		{name: "pod OnFailure exit 1", podPolicy: corev1.RestartPolicyOnFailure, code: 1, restart: true, why: "restartPolicy OnFailure"},
		{name: "pod Never", podPolicy: corev1.RestartPolicyNever, code: 1, why: "restartPolicy Never"},
		{name: "container Never overrides pod Always", podPolicy: corev1.RestartPolicyAlways,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever)}, code: 1, why: "container restartPolicy Never"},
		{name: "rule In matches", podPolicy: corev1.RestartPolicyNever,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
				rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}},
			code: 42, restart: true, why: "restartPolicyRules[0] (exit code In [42]): Restart"},
		{name: "rule In does not match", podPolicy: corev1.RestartPolicyNever,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
				rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}},
			code: 1, why: "container restartPolicy Never"},
		{name: "rule NotIn matches", podPolicy: corev1.RestartPolicyAlways,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
				rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1)}},
			code: 3, restart: true, why: "restartPolicyRules[0] (exit code NotIn [0, 1]): Restart"},
		{name: "RestartAllContainers", podPolicy: corev1.RestartPolicyNever,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
				rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn, 7)}},
			code: 7, restart: true, all: true, why: "restartPolicyRules[0] (exit code In [7]): RestartAllContainers"},
		{name: "RestartAllContainers gate off falls back", podPolicy: corev1.RestartPolicyAlways, g: noAll,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
				rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn, 7)}},
			code: 7, why: "container restartPolicy Never"},
		{name: "gate off: the pod's policy alone", podPolicy: corev1.RestartPolicyAlways, g: off,
			c: corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever)}, code: 1, restart: true, why: "restartPolicy Always"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &corev1.PodSpec{RestartPolicy: tc.podPolicy}
			d := Decide(&tc.c, spec, tc.code, tc.g)
			if d.Restart != tc.restart || d.RestartAll != tc.all || d.Why != tc.why {
				t.Errorf("Decide = %+v, want restart %v all %v why %q", d, tc.restart, tc.all, tc.why)
			}
		})
	}
}

func TestRestartable(t *testing.T) {
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	c := corev1.Container{RestartPolicy: policy(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{
		rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}}
	if !Restartable(&c, spec, gate.Gates{}) {
		t.Error("a Restart rule makes the container restartable")
	}
	if Restartable(&corev1.Container{}, spec, gate.Gates{}) {
		t.Error("pod Never, no container policy: not restartable")
	}
	if AnyRestartAll(spec, gate.Gates{}) {
		t.Error("no RestartAllContainers rule")
	}
	spec.Containers = []corev1.Container{{RestartPolicyRules: []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn, 1)}}}
	if !AnyRestartAll(spec, gate.Gates{}) {
		t.Error("a RestartAllContainers rule")
	}
}
