package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// KindServices is the Fetched kind of a list of Services (its Count says
// how many).
const KindServices = "Services"

// masterService is the Service of namespace default whose variables every
// pod gets, enableServiceLinks or not (masterServices in
// pkg/kubelet/kubelet_pods.go).
const masterService = "kubernetes"

// services reads the Services whose variables the kubelet puts in every
// container's environment (getServiceEnvVarMap, pkg/kubelet/kubelet_pods.go):
// with enableServiceLinks those of the pod's namespace (list services in
// it), and always default/kubernetes (get services; in the list already
// for a pod of namespace default). The kubelet's informer holds every
// Service of the cluster and keeps only these; podstep reads only these.
// A kubernetes Service that is not there is left out, as the kubelet's
// lister would not have it. The bundle's Services is set (empty, not nil,
// when there are none): the API server was asked.
func (c *Client) services(ctx context.Context, r *Resolved) error {
	pod := r.Bundle.Pod
	ns := pod.Namespace
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks // the API server defaults it to true
	out := []*corev1.Service{}
	if links {
		list, err := kube.List[corev1.ServiceList](ctx, c.API, kube.Services, ns, metav1.ListOptions{})
		if err != nil {
			return c.classify(err, "list", "services", ns, "")
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		r.Fetched = append(r.Fetched, Fetched{Kind: KindServices, Namespace: ns, ResourceVersion: list.ResourceVersion, Found: true,
			Count: len(list.Items), Why: "enableServiceLinks: the namespace's Services' env vars"})
	}
	if !links || ns != metav1.NamespaceDefault {
		svc, err := kube.Get[corev1.Service](ctx, c.API, kube.Services, metav1.NamespaceDefault, masterService)
		f := Fetched{Kind: "Service", Namespace: metav1.NamespaceDefault, Name: masterService, Why: "the master Service's env vars (KUBERNETES_SERVICE_HOST, …)"}
		switch {
		case err == nil:
			out = append(out, svc)
			f.Found, f.ResourceVersion = true, svc.ResourceVersion
		case apierrors.IsNotFound(err):
		default:
			return c.classify(err, "get", "services", metav1.NamespaceDefault, masterService)
		}
		r.Fetched = append(r.Fetched, f)
	}
	r.Bundle.Services = out
	return nil
}
