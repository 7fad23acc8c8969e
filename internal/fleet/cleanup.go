package fleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// Cleanup is `podstep fleet cleanup`: it deletes the parent ConfigMap of
// every fleet in ns (or of fleet id), and the garbage collector removes
// the runners and manifests they own; with wait, it then waits (up to
// wait) until none of them is left, and counts what went.
func Cleanup(ctx context.Context, c *Client, ns, id string, wait time.Duration) (Deleted, error) {
	var d Deleted
	sel := LabelFleet
	if id != "" {
		sel = LabelFleet + "=" + id
	}
	parents, err := kube.List[corev1.ConfigMapList](ctx, c.API, kube.ConfigMaps, ns, metav1.ListOptions{LabelSelector: sel + "," + LabelRole + "=" + RoleParent})
	if err := c.classify(err, "list", "configmaps", ns); err != nil {
		return d, err
	}
	bg := metav1.DeletePropagationBackground
	for _, p := range parents.Items {
		err := c.API.Delete(ctx, kube.ConfigMaps, ns, p.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err := c.classify(err, "delete", "configmaps", ns); err != nil && !apierrors.IsNotFound(err) {
			return d, err
		}
		d.Parents++
	}
	if wait <= 0 {
		return d, nil
	}
	// What the garbage collector still has to remove.
	deadline := time.Now().Add(wait)
	first := true
	var pods0, cms0 int
	for {
		pods, err := kube.List[corev1.PodList](ctx, c.API, kube.Pods, ns, metav1.ListOptions{LabelSelector: sel})
		if err := c.classify(err, "list", "pods", ns); err != nil {
			return d, err
		}
		cms, err := kube.List[corev1.ConfigMapList](ctx, c.API, kube.ConfigMaps, ns, metav1.ListOptions{LabelSelector: sel + "," + LabelRole + "=" + RoleManifest})
		if err := c.classify(err, "list", "configmaps", ns); err != nil {
			return d, err
		}
		if first {
			pods0, cms0, first = len(pods.Items), len(cms.Items), false
		}
		d.Pods, d.ConfigMaps, d.Left = pods0-len(pods.Items), cms0-len(cms.Items), len(pods.Items)
		if len(pods.Items) == 0 && len(cms.Items) == 0 {
			return d, nil
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("after %s, %d runner pod(s) and %d ConfigMap(s) of podstep fleets are still in namespace %s (is the garbage collector of kube-controller-manager running?)",
				wait, len(pods.Items), len(cms.Items), ns)
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// PodFromCluster reads the pod ns/name to replay, keeping what a
// manifest holds (name, namespace, labels, annotations, spec) and not what
// the cluster added (status, managedFields, ownerReferences, uid).
func PodFromCluster(ctx context.Context, c *Client, ns, name string) (*corev1.Pod, error) {
	p, err := kube.Get[corev1.Pod](ctx, c.API, kube.Pods, ns, name)
	if err := c.classify(err, "get", "pods", ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pod %s/%s: not found", ns, name)
		}
		return nil, err
	}
	out := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations},
		Spec:       *p.Spec.DeepCopy()}
	out.Spec.NodeName = ""
	return out, nil
}
