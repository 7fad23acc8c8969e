// Package kube is podstep's Kubernetes API client: the few resources
// podstep reads and writes (core/v1, apps/v1, batch/v1, storage/v1 and the
// TokenRequest subresource), through client-go's rest client with a scheme
// of only those groups, built when a client is made.
//
// Why not client-go's typed clientset: linking it runs the init of
// k8s.io/client-go/kubernetes/scheme, which registers every API group
// (~675 KB and ~5,700 allocations on every podstep command, and the
// packages of ~50 API groups, gnostic and structured-merge-diff linked
// in); see docs/measurements.md (issue 36). The requests are the typed
// clientset's: the same paths, query parameters (runtime.ParameterCodec),
// content negotiation (rest.CodecFactoryForGeneratedClient, JSON or CBOR as
// client-go's feature gates say), rate limiter shared by all groups, and
// the same errors (apierrors).
package kube

import (
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Resource names an API resource: its group, version, plural name and
// kind (the kind of one object, for fakes' list actions). A request with
// namespace "" is cluster-wide (a cluster-scoped object, or a list over
// all namespaces).
type Resource struct {
	Group, Version, Resource, Kind string
}

// GroupVersion is r's API group and version.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GVR is r as client-go's GroupVersionResource.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GVK is the kind of one object of r.
func (r Resource) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// The resources podstep uses.
var (
	Pods                   = Resource{"", "v1", "pods", "Pod"}
	ConfigMaps             = Resource{"", "v1", "configmaps", "ConfigMap"}
	Secrets                = Resource{"", "v1", "secrets", "Secret"}
	Nodes                  = Resource{"", "v1", "nodes", "Node"}
	ServiceAccounts        = Resource{"", "v1", "serviceaccounts", "ServiceAccount"}
	Events                 = Resource{"", "v1", "events", "Event"}
	Services               = Resource{"", "v1", "services", "Service"}
	PersistentVolumeClaims = Resource{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"}
	PersistentVolumes      = Resource{"", "v1", "persistentvolumes", "PersistentVolume"}
	ReplicationControllers = Resource{"", "v1", "replicationcontrollers", "ReplicationController"}
	Deployments            = Resource{"apps", "v1", "deployments", "Deployment"}
	ReplicaSets            = Resource{"apps", "v1", "replicasets", "ReplicaSet"}
	StatefulSets           = Resource{"apps", "v1", "statefulsets", "StatefulSet"}
	DaemonSets             = Resource{"apps", "v1", "daemonsets", "DaemonSet"}
	Jobs                   = Resource{"batch", "v1", "jobs", "Job"}
	CronJobs               = Resource{"batch", "v1", "cronjobs", "CronJob"}
	CSIDrivers             = Resource{"storage.k8s.io", "v1", "csidrivers", "CSIDriver"}
	VolumeAttachments      = Resource{"storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment"}
)

// API is the part of the Kubernetes API podstep uses. New makes the real
// one; kubefake adapts client-go's fake clientset for tests. into and obj
// are the typed objects of r (a *corev1.Pod for Pods, a *corev1.PodList
// for a list of them).
type API interface {
	// Get reads one object into into.
	Get(ctx context.Context, r Resource, ns, name string, into runtime.Object) error
	// List reads the objects matching opts into into (a list).
	List(ctx context.Context, r Resource, ns string, opts metav1.ListOptions, into runtime.Object) error
	// Create creates obj (or, with subresource, posts obj to the named
	// object's subresource: serviceaccounts/NAME/token) and reads the
	// answer into into.
	Create(ctx context.Context, r Resource, ns, name, subresource string, obj, into runtime.Object) error
	// Delete deletes one object.
	Delete(ctx context.Context, r Resource, ns, name string, opts metav1.DeleteOptions) error
	// Watch watches the objects matching opts.
	Watch(ctx context.Context, r Resource, ns string, opts metav1.ListOptions) (watch.Interface, error)
	// Logs streams a pod's log.
	Logs(ctx context.Context, ns, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error)
	// Raw GETs an absolute path (/api/v1/nodes/NAME/proxy/configz) and
	// returns the body.
	Raw(ctx context.Context, path ...string) ([]byte, error)
}

// Get reads one object of r: a *T.
func Get[T any, P interface {
	*T
	runtime.Object
}](ctx context.Context, a API, r Resource, ns, name string) (P, error) {
	obj := P(new(T))
	if err := a.Get(ctx, r, ns, name, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// List reads the objects of r matching opts: a *T list.
func List[T any, P interface {
	*T
	runtime.Object
}](ctx context.Context, a API, r Resource, ns string, opts metav1.ListOptions) (P, error) {
	obj := P(new(T))
	if err := a.List(ctx, r, ns, opts, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Create creates obj (a *T) and returns what the API server stored.
func Create[T any, P interface {
	*T
	runtime.Object
}](ctx context.Context, a API, r Resource, ns string, obj P) (P, error) {
	out := P(new(T))
	if err := a.Create(ctx, r, ns, "", "", obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// NewScheme is a scheme of the API groups podstep uses, with the meta/v1
// types (Status, WatchEvent, the options) as client-go's scheme has them.
// Built on each call: nothing at package init.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		storagev1.AddToScheme, authenticationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("kube: scheme: %v", err)) // the generated registrations do not fail
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// client is the real API: one rest client per group version, sharing one
// HTTP client and one rate limiter, as kubernetes.NewForConfig makes them.
type client struct {
	params  runtime.ParameterCodec
	byGroup map[schema.GroupVersion]*rest.RESTClient
}

// New makes the API client for cfg (its QPS and Burst, wrapped
// transports, timeout, user agent as set). It sends nothing.
func New(cfg *rest.Config) (API, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	s := NewScheme()
	codecs := serializer.NewCodecFactory(s)
	c := &client{params: runtime.NewParameterCodec(s), byGroup: map[schema.GroupVersion]*rest.RESTClient{}}
	for _, gv := range []schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, batchv1.SchemeGroupVersion, storagev1.SchemeGroupVersion} {
		gc := *cfg
		gc.GroupVersion = &gv
		gc.APIPath = "/apis"
		if gv.Group == "" {
			gc.APIPath = "/api"
		}
		gc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, codecs).WithoutConversion()
		rc, err := rest.RESTClientForConfigAndClient(&gc, hc)
		if err != nil {
			return nil, err
		}
		c.byGroup[gv] = rc
	}
	return c, nil
}

func (c *client) rc(r Resource) *rest.RESTClient {
	rc := c.byGroup[r.GroupVersion()]
	if rc == nil {
		panic(fmt.Sprintf("kube: no client for %s", r.GroupVersion())) // a Resource above without its group in New
	}
	return rc
}

func (c *client) Get(ctx context.Context, r Resource, ns, name string, into runtime.Object) error {
	return c.rc(r).Get().NamespaceIfScoped(ns, ns != "").Resource(r.Resource).Name(name).
		VersionedParams(&metav1.GetOptions{}, c.params).Do(ctx).Into(into)
}

func (c *client) List(ctx context.Context, r Resource, ns string, opts metav1.ListOptions, into runtime.Object) error {
	req := c.rc(r).Get().NamespaceIfScoped(ns, ns != "").Resource(r.Resource).VersionedParams(&opts, c.params)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(timeout(*opts.TimeoutSeconds))
	}
	return req.Do(ctx).Into(into)
}

func (c *client) Create(ctx context.Context, r Resource, ns, name, subresource string, obj, into runtime.Object) error {
	req := c.rc(r).Post().NamespaceIfScoped(ns, ns != "").Resource(r.Resource)
	if subresource != "" {
		req = req.Name(name).SubResource(subresource)
	}
	return req.VersionedParams(&metav1.CreateOptions{}, c.params).Body(obj).Do(ctx).Into(into)
}

func (c *client) Delete(ctx context.Context, r Resource, ns, name string, opts metav1.DeleteOptions) error {
	return c.rc(r).Delete().NamespaceIfScoped(ns, ns != "").Resource(r.Resource).Name(name).Body(&opts).Do(ctx).Error()
}

func (c *client) Watch(ctx context.Context, r Resource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := c.rc(r).Get().NamespaceIfScoped(ns, ns != "").Resource(r.Resource).VersionedParams(&opts, c.params)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(timeout(*opts.TimeoutSeconds))
	}
	return req.Watch(ctx)
}

func (c *client) Logs(ctx context.Context, ns, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.rc(Pods).Get().Namespace(ns).Resource("pods").Name(name).SubResource("log").
		VersionedParams(opts, c.params).Stream(ctx)
}

func (c *client) Raw(ctx context.Context, path ...string) ([]byte, error) {
	return c.rc(Pods).Get().AbsPath(path...).DoRaw(ctx)
}

// timeout is a ListOptions' TimeoutSeconds as the typed clients turn it
// into the request's timeout.
func timeout(s int64) time.Duration { return time.Duration(s) * time.Second }
