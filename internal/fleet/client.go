package fleet

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/cluster/kube"
)

// Client is the fleet's API client (internal/cluster/kube) that counts
// its requests by second (the bar of ≤ 3 requests per node per second).
type Client struct {
	API    kube.API
	Server string
	// Namespace is the kubeconfig context's namespace.
	Namespace string

	mu    sync.Mutex
	total int
	bySec map[int64]int
}

// Connect loads the kubeconfig with internal/cluster's loader, as kubectl
// does (--kubeconfig, else $KUBECONFIG, else ~/.kube/config, else
// in-cluster; --context), and makes a client. It sends nothing.
func Connect(kubeconfig, context string, allowExec bool, stderr io.Writer) (*Client, error) {
	l, err := cluster.Load(cluster.Options{Kubeconfig: kubeconfig, Context: context, AllowExecPlugins: allowExec, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	return NewClient(l.Config, l.Namespace)
}

// NewClient makes a client for cfg.
func NewClient(cfg *rest.Config, namespace string) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	// Hundreds of nodes at once: client-go's default 5 requests per second
	// would make the fleet wait on itself.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "podstep-fleet"
	c := &Client{Server: cfg.Host, Namespace: namespace, bySec: map[int64]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &counter{next: rt, c: c} })
	api, err := kube.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server %s: %w", cfg.Host, err)
	}
	c.API = api
	return c, nil
}

type counter struct {
	next http.RoundTripper
	c    *Client
}

func (t *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.mu.Lock()
	t.c.total++
	t.c.bySec[time.Now().Unix()]++
	t.c.mu.Unlock()
	return t.next.RoundTrip(r)
}

// Requests are the requests sent, and the most sent in one second.
func (c *Client) Requests() (total, peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.bySec {
		peak = max(peak, n)
	}
	return c.total, peak
}

// AccessError is a request the API server refused for the fleet's
// credentials: the verb, the resource and what to grant.
type AccessError struct {
	Server, Verb, Resource, Namespace string
	Err                               error
}

func (e *AccessError) Error() string {
	where := ""
	if e.Namespace != "" {
		where = fmt.Sprintf(" in namespace %q", e.Namespace)
	}
	return fmt.Sprintf("API server %s denied %q on %q%s: podstep fleet needs %s %s (deploy/fleet.yaml; the API server said: %s)",
		e.Server, e.Verb, e.Resource, where, e.Verb, e.Resource, Clean(e.Err.Error()))
}

func (e *AccessError) Unwrap() error { return e.Err }

// UnreachableError is an API server that did not answer.
type UnreachableError struct {
	Server, What string
	Err          error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("API server %s unreachable (%s): %s", e.Server, e.What, Clean(e.Err.Error()))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// classify turns a client-go error into an *AccessError, an
// *UnreachableError or a wrapped error (NotFound and AlreadyExists as is).
func (c *Client) classify(err error, verb, resource, ns string) error {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		return err
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &AccessError{Server: c.Server, Verb: verb, Resource: resource, Namespace: ns, Err: err}
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return fmt.Errorf("API server %s: %s %s: %w", c.Server, verb, resource, err)
	}
	return &UnreachableError{Server: c.Server, What: verb + " " + resource, Err: err}
}
