package cluster

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
)

// ReplayLabel is the label podstep's sandbox of a cluster pod carries: the
// UID of the cluster's pod it replays (podstep's own pod has ReplayUID).
const ReplayLabel = "podstep.dev/replay-of"

// ReplayUID is the UID podstep gives its replay of the cluster pod uid:
// a name-based UUID (version 5 layout, SHA-1 of "podstep.dev/replay/"+uid),
// the same for every run of the same pod, never the pod's own. The
// kubelet's sandbox of the pod (metadata uid, name k8s_POD_NAME_NS_UID_N,
// pod dir, cgroup pod<UID>) and podstep's therefore never meet, even on the
// node where the kubelet runs the pod.
func ReplayUID(uid types.UID) types.UID {
	sum := sha1.Sum([]byte("podstep.dev/replay/" + string(uid)))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

// Fetched is one object read from the API server for the run.
type Fetched struct {
	Kind, Namespace, Name string
	// ResourceVersion is the object's; "" when it was not found.
	ResourceVersion string
	Found           bool
	// Why names what referenced it.
	Why string
	// Count is how many objects a list (KindServices) returned.
	Count int
}

// Resolved is what Resolve read for one pod.
type Resolved struct {
	// Bundle is the manifest the engine runs: the pod (under ReplayUID),
	// the file's own Secrets and ConfigMaps, those fetched, and Origins.
	Bundle *manifest.Bundle
	// ClusterPod is the pod as the API server has it; nil for a manifest
	// whose pod is not in the cluster.
	ClusterPod *corev1.Pod
	// Node is the node to admit the pod to: the API server's Node and the
	// pods bound to it; nil when the pod is not bound and no node was named.
	Node *node.Node
	// Tokens is the run's token manager (volume.TokenSource).
	Tokens *Tokens
	// Fetched lists every object read, in order.
	Fetched []Fetched
	// Notes say how podstep's view differs from the kubelet's.
	Notes []string
}

// ResolveOptions say what to fetch.
type ResolveOptions struct {
	// NodeName is --node NAME: admit to this Node of the cluster instead
	// of the pod's spec.nodeName.
	NodeName string
	// NoTokens leaves the TokenRequests out (podstep plan: nothing is
	// minted for a plan).
	NoTokens bool
	// NoNode leaves the Node and its pods out (the caller has a node).
	NoNode bool
	// Services reads the Services whose env vars the kubelet adds to the
	// pod's containers (the namespace's with enableServiceLinks, and
	// default/kubernetes) into the bundle's Services: run --pod and plan
	// --pod. A manifest (-f) gets none, as without an API server.
	Services bool
}

// GetPod reads pod ns/name (ns "" is the context's namespace) and makes it
// a manifest, as `kubectl get pod -o yaml` would give it to `podstep run -f`:
// status, managedFields and ownerReferences are accepted and the API
// server's defaults are already in it. (get pods)
func (c *Client) GetPod(ctx context.Context, ns, name string) (*manifest.Bundle, *corev1.Pod, error) {
	if ns == "" {
		ns = c.Namespace
	}
	pod, err := kube.Get[corev1.Pod](ctx, c.API, kube.Pods, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, nil, &NotFoundError{Server: c.Server, What: fmt.Sprintf("pod %q in namespace %q", name, ns)}
	}
	if err != nil {
		return nil, nil, c.classify(err, "get", "pods", ns, name)
	}
	// The engine starts from the spec, as a kubelet that is given the pod
	// does; the cluster's status is the view's (View), not the run's.
	spec := pod.DeepCopy()
	spec.APIVersion, spec.Kind = "v1", "Pod"
	spec.Status = corev1.PodStatus{}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	b, err := manifest.Parse(fmt.Sprintf("pod %s/%s from the API server", ns, name), data)
	if err != nil {
		return nil, nil, err
	}
	b.Origins = map[string]string{manifest.OriginKey(manifest.KindPod, ns, name): c.origin(pod.ObjectMeta)}
	return b, pod, nil
}

// NotFoundError is a pod or node named on the command line that the API
// server does not have (bad input: exit 2).
type NotFoundError struct {
	Server, What string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("API server %s has no %s", e.Server, e.What)
}

func (c *Client) origin(m metav1.ObjectMeta) string {
	return fmt.Sprintf("the API server %s (resourceVersion %s)", c.Server, m.ResourceVersion)
}

// Resolve fetches what the kubelet would for the bundle's pod: every
// ConfigMap and Secret it references (one GET each; the file's own objects
// are not fetched), its service-account tokens (one TokenRequest each), with
// o.Services the Services of its env vars (services.go), and the Node it
// runs on with the pods bound to it. clusterPod is the pod as
// the API server has it (GetPod), or nil for a manifest file, whose pod is
// then looked up by name to bind its tokens (get pods). The bundle's pod is
// given ReplayUID. A NotFound object is left out, so that the engine gives
// the kubelet's error for it where the kubelet would; a denied or
// unanswered request is an *AccessError or *UnreachableError.
func (c *Client) Resolve(ctx context.Context, b *manifest.Bundle, clusterPod *corev1.Pod, o ResolveOptions) (*Resolved, error) {
	pod := b.Pod
	ns := pod.Namespace
	r := &Resolved{Bundle: b, ClusterPod: clusterPod}
	if b.Origins == nil {
		b.Origins = map[string]string{}
	}

	var boundUID types.UID
	if clusterPod != nil {
		boundUID = clusterPod.UID
	} else {
		// A manifest: is its pod the cluster's (kubectl get -o yaml)?
		cp, err := kube.Get[corev1.Pod](ctx, c.API, kube.Pods, ns, pod.Name)
		switch {
		case err == nil && cp.UID == pod.UID:
			boundUID = cp.UID
			r.ClusterPod = cp
			r.Fetched = append(r.Fetched, Fetched{Kind: manifest.KindPod, Namespace: ns, Name: pod.Name, ResourceVersion: cp.ResourceVersion, Found: true, Why: "the manifest's pod (same UID)"})
		case err == nil || apierrors.IsNotFound(err):
			r.Fetched = append(r.Fetched, Fetched{Kind: manifest.KindPod, Namespace: ns, Name: pod.Name, Found: err == nil, Why: "the manifest's pod (not the same UID)"})
			if len(tokenProjections(pod)) > 0 && !o.NoTokens {
				r.Notes = append(r.Notes, fmt.Sprintf("pod %s/%s with UID %s is not in the cluster: its service-account tokens are bound to no pod (the kubelet binds them to its pod)", ns, pod.Name, pod.UID))
			}
		default:
			return nil, c.classify(err, "get", "pods", ns, pod.Name)
		}
	}
	if r.ClusterPod == nil && len(pod.Spec.ImagePullSecrets) == 0 {
		if err := c.serviceAccountPullSecrets(ctx, r, pod); err != nil {
			return nil, err
		}
	}
	if boundUID != "" {
		pod.UID = ReplayUID(boundUID)
		r.Notes = append(r.Notes, fmt.Sprintf("podstep runs the pod under its own UID %s, beside the kubelet's %s (sandbox label %s=%s): it never touches the kubelet's sandbox or containers of this pod", pod.UID, boundUID, ReplayLabel, boundUID))
	}

	for _, rf := range references(pod) {
		if err := c.fetchRef(ctx, b, r, ns, rf); err != nil {
			return nil, err
		}
	}
	if err := c.fetchClaims(ctx, b, r); err != nil {
		return nil, err
	}
	if err := c.fetchCSIDrivers(ctx, b, r); err != nil {
		return nil, err
	}
	vaNode := o.NodeName
	if vaNode == "" {
		vaNode = pod.Spec.NodeName
	}
	if err := c.fetchVolumeAttachments(ctx, b, r, vaNode); err != nil {
		return nil, err
	}

	r.Tokens = c.NewTokens(pod.UID, boundUID)
	if !o.NoTokens {
		for _, tp := range tokenProjections(pod) {
			sa := pod.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			_, err := r.Tokens.GetServiceAccountToken(ns, sa, tokenRequest(pod, tp))
			var ae *AccessError
			var ue *UnreachableError
			if asAccess(err, &ae) {
				return nil, ae
			}
			if asUnreachable(err, &ue) {
				return nil, ue
			}
			// Any other error (the service account is not there) is the
			// volume's, at the volumes step, as the kubelet's.
			r.Fetched = append(r.Fetched, Fetched{Kind: "TokenRequest", Namespace: ns, Name: sa, Found: err == nil, Why: "projected serviceAccountToken " + tp.Path})
		}
	}

	if o.Services {
		if err := c.services(ctx, r); err != nil {
			return nil, err
		}
	}

	if !o.NoNode {
		name := o.NodeName
		if name == "" {
			name = pod.Spec.NodeName
		}
		if name != "" {
			n, err := c.nodeFor(ctx, r, name, boundUID)
			if err != nil {
				return nil, err
			}
			r.Node = n
		} else {
			r.Notes = append(r.Notes, "the pod is bound to no node (spec.nodeName is empty) and no --node was given: admission checks this machine")
		}
	}
	return r, nil
}

// tokenRequest is the request projected.go collectData makes for tp, bound
// to the pod the engine runs (Tokens rebinds it to the cluster's).
func tokenRequest(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	var auds []string
	if tp.Audience != "" {
		auds = []string{tp.Audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: auds, ExpirationSeconds: tp.ExpirationSeconds,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
}

// fetchRef GETs one ConfigMap or Secret unless the file has it: the
// kubelet's configmap and secret managers (pkg/kubelet/configmap and
// pkg/kubelet/secret) read each object the pod names, and nothing else.
// The kubelet's default strategy watches each object (a list/watch with
// fieldSelector metadata.name); podstep's one GET per object is its Get
// strategy (ConfigMapAndSecretChangeDetectionStrategy: Get).
func (c *Client) fetchRef(ctx context.Context, b *manifest.Bundle, r *Resolved, ns string, rf ref) error {
	key := ns + "/" + rf.name
	var (
		meta metav1.ObjectMeta
		err  error
	)
	switch rf.kind {
	case manifest.KindConfigMap:
		if _, ok := b.ConfigMaps[key]; ok {
			return nil
		}
		var cm *corev1.ConfigMap
		if cm, err = kube.Get[corev1.ConfigMap](ctx, c.API, kube.ConfigMaps, ns, rf.name); err == nil {
			b.ConfigMaps[key] = cm
			meta = cm.ObjectMeta
		}
		err = c.classify(err, "get", "configmaps", ns, rf.name)
	case manifest.KindSecret:
		if _, ok := b.Secrets[key]; ok {
			return nil
		}
		var s *corev1.Secret
		if s, err = kube.Get[corev1.Secret](ctx, c.API, kube.Secrets, ns, rf.name); err == nil {
			b.Secrets[key] = s
			meta = s.ObjectMeta
		}
		err = c.classify(err, "get", "secrets", ns, rf.name)
	}
	f := Fetched{Kind: rf.kind, Namespace: ns, Name: rf.name}
	switch {
	case err == nil:
		f.Found, f.ResourceVersion = true, meta.ResourceVersion
		b.Origins[manifest.OriginKey(rf.kind, ns, rf.name)] = c.origin(meta)
	case apierrors.IsNotFound(err):
		// Left out: the engine says what the kubelet says for it.
	default:
		return err
	}
	r.Fetched = append(r.Fetched, f)
	return nil
}

// nodeFor reads the Node and the pods bound to it that are not terminal,
// as the kubelet's admit handlers get them (HandlePodAdditions, kubelet.go,
// hands GetActivePods, filterOutInactivePods in kubelet_pods.go, to
// allocationManager.AddPod → canAdmitPod, allocation/allocation_manager.go,
// which leaves the pod itself out). (get nodes; list pods with
// fieldSelector spec.nodeName)
func (c *Client) nodeFor(ctx context.Context, r *Resolved, name string, self types.UID) (*node.Node, error) {
	obj, err := kube.Get[corev1.Node](ctx, c.API, kube.Nodes, "", name)
	if apierrors.IsNotFound(err) {
		return nil, &NotFoundError{Server: c.Server, What: fmt.Sprintf("node %q", name)}
	}
	if err != nil {
		return nil, c.classify(err, "get", "nodes", "", name)
	}
	r.Fetched = append(r.Fetched, Fetched{Kind: manifest.KindNode, Name: name, ResourceVersion: obj.ResourceVersion, Found: true, Why: "admission"})
	sel := fields.AndSelectors(
		fields.OneTermEqualSelector("spec.nodeName", name),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	list, err := kube.List[corev1.PodList](ctx, c.API, kube.Pods, "", metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, c.classify(err, "list", "pods", "", "fieldSelector "+sel)
	}
	// The Node object carries no podstep notation: drop it if someone put it there.
	delete(obj.Annotations, node.ExistingPodsAnnotation)
	n, err := node.FromObject(obj, fmt.Sprintf("node %s from the API server %s, resourceVersion %s", name, c.Server, obj.ResourceVersion))
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range list.Items {
		p := &list.Items[i]
		if p.UID == self || p.Spec.NodeName != name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n.Existing = append(n.Existing, p)
		names = append(names, p.Namespace+"/"+p.Name)
	}
	r.Fetched = append(r.Fetched, Fetched{Kind: "PodList", Name: "spec.nodeName=" + name, ResourceVersion: list.ResourceVersion, Found: true,
		Why: fmt.Sprintf("%d other pod(s) on the node: %s", len(names), strings.Join(names, ", "))})
	return n, nil
}

// serviceAccountPullSecrets gives a manifest's pod without imagePullSecrets
// those of its service account, as the API server's ServiceAccount
// admission plugin does when a pod is created
// (plugin/pkg/admission/serviceaccount/admission.go Admit); a pod read from
// the API server already went through it. (get serviceaccounts)
func (c *Client) serviceAccountPullSecrets(ctx context.Context, r *Resolved, pod *corev1.Pod) error {
	name := pod.Spec.ServiceAccountName
	if name == "" {
		name = "default"
	}
	sa, err := kube.Get[corev1.ServiceAccount](ctx, c.API, kube.ServiceAccounts, pod.Namespace, name)
	if apierrors.IsNotFound(err) {
		r.Fetched = append(r.Fetched, Fetched{Kind: "ServiceAccount", Namespace: pod.Namespace, Name: name, Why: "imagePullSecrets"})
		r.Notes = append(r.Notes, fmt.Sprintf("service account %s/%s is not in the cluster (the API server would refuse the pod)", pod.Namespace, name))
		return nil
	}
	if err != nil {
		return c.classify(err, "get", "serviceaccounts", pod.Namespace, name)
	}
	r.Fetched = append(r.Fetched, Fetched{Kind: "ServiceAccount", Namespace: pod.Namespace, Name: name, ResourceVersion: sa.ResourceVersion, Found: true, Why: "imagePullSecrets"})
	for _, s := range sa.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
	}
	if len(sa.ImagePullSecrets) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("imagePullSecrets of service account %s/%s added, as the API server's ServiceAccount admission would", pod.Namespace, name))
	}
	return nil
}

// Pod reads pod ns/name as the API server has it, with one GET (get pods),
// and says where it came from ("the API server URL (resourceVersion N)"):
// `podstep proxy --kubeconfig` reads the spec of each pod a kubelet
// creates. A pod that is not there is a *NotFoundError; a denied or
// unanswered request an *AccessError or *UnreachableError.
func (c *Client) Pod(ctx context.Context, ns, name string) (*corev1.Pod, string, error) {
	pod, err := kube.Get[corev1.Pod](ctx, c.API, kube.Pods, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, "", &NotFoundError{Server: c.Server, What: fmt.Sprintf("pod %q in namespace %q", name, ns)}
	}
	if err != nil {
		return nil, "", c.classify(err, "get", "pods", ns, name)
	}
	return pod, c.origin(pod.ObjectMeta), nil
}
