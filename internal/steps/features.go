package steps

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// needsRuntimeFeatures says whether the admit step must learn the runtime's
// features first: the pod sets supplementalGroupsPolicy, which the
// predicate handler checks against the node's status.features
// (rejectPodAdmissionBasedOnSupplementalGroupsPolicy), and the node's
// features are the runtime's (this machine).
func (e *Engine) needsRuntimeFeatures() bool {
	sc := e.pod.Spec.SecurityContext
	return sc != nil && sc.SupplementalGroupsPolicy != nil && e.opts.Node != nil && e.opts.Node.FeaturesFromRuntime
}

// runtimeFeaturesRequest is the Status call the admit step sends when
// needsRuntimeFeatures.
func runtimeFeaturesRequest() Request {
	return Request{Method: "Status", Message: &runtimeapi.StatusRequest{},
		Note: "the kubelet asked at start-up (updateRuntimeUp) and keeps features.supplemental_groups_policy in its Node's status.features (NodeFeatures setter); podstep asks now"}
}

// learnRuntimeFeatures mirrors how the node's status.features comes to be:
// updateRuntimeUp (pkg/kubelet/kubelet.go) stores the CRI RuntimeStatus
// features, and the NodeFeatures setter (pkg/kubelet/nodestatus/setters.go)
// publishes them as status.features.supplementalGroupsPolicy; a runtime that
// answers no features (containerd 1.6) leaves status.features unset, which
// admission reads as false.
func (e *Engine) learnRuntimeFeatures(ctx context.Context) (Detail, error) {
	st, err := e.client.Status(ctx, false)
	if err != nil {
		return Detail{}, fmt.Errorf("Status failed: %w", err)
	}
	f := st.GetFeatures()
	if f == nil {
		e.opts.Node.Object.Status.Features = nil
		return kv("runtime features", "the runtime's Status answers no features (containerd 1.6 predates them): status.features stays unset, so supplementalGroupsPolicy is not supported on this node"), nil
	}
	v := f.SupplementalGroupsPolicy
	e.opts.Node.Object.Status.Features = &corev1.NodeFeatures{SupplementalGroupsPolicy: &v}
	return kv("runtime features", fmt.Sprintf("Status features.supplemental_groups_policy = %v → node status.features.supplementalGroupsPolicy", v)), nil
}
