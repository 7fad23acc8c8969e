package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkSelected mirrors the selector checks of the apps validation
// (pkg/apis/apps/validation/validation.go: ValidateDeploymentSpec,
// ValidateReplicaSetSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec,
// ValidatePodTemplateSpecForReplicaSet): spec.selector is required in
// apps/v1, must be valid and non-empty, and must match the template's labels.
func checkSelected(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, spec, what string) *FieldError {
	if sel == nil {
		return fieldErr(spec+".selector", "required value; expected a label selector matching spec.template.metadata.labels (apps/v1 has no default)")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fieldErr(spec+".selector", "invalid value: %v; expected a valid label selector", err)
	}
	if s.Empty() {
		return fieldErr(spec+".selector", "invalid value: empty selector is invalid for %s; expected matchLabels or matchExpressions", what)
	}
	if !s.Matches(labels.Set(t.Labels)) {
		return fieldErr(spec+".template.metadata.labels", "invalid value %v: `selector` does not match template `labels`; expected labels that %s selects", labels.Set(t.Labels), s)
	}
	return nil
}

// checkReplicaSetTemplate is ValidatePodTemplateSpecForReplicaSet's (and
// ValidatePodTemplateSpecForRC's) restartPolicy and activeDeadlineSeconds
// rules.
func checkReplicaSetTemplate(t *corev1.PodTemplateSpec, path, kind string) *FieldError {
	if rp := t.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways && rp != "" {
		return fieldErr(path+".spec.restartPolicy", "unsupported value %q; expected \"Always\"", rp)
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		return fieldErr(path+".spec.activeDeadlineSeconds", "forbidden: activeDeadlineSeconds in %s is not Supported; expected no activeDeadlineSeconds", kind)
	}
	return nil
}

func checkReplicas(r *int32) *FieldError {
	if r != nil && *r < 0 {
		return fieldErr("spec.replicas", "invalid value %d: must be greater than or equal to 0", *r)
	}
	return nil
}

// checkTemplate is ValidatePodTemplateSpec's rule that podstep's pod
// validation would not see: no ephemeral containers in a template.
func checkTemplate(t *corev1.PodTemplateSpec, path string) *FieldError {
	if len(t.Spec.EphemeralContainers) > 0 {
		return fieldErr(path+".spec.ephemeralContainers", "forbidden: ephemeral containers not allowed in pod template")
	}
	return nil
}
