// Package cluster reads a pod, and everything the kubelet would fetch for
// it, from a Kubernetes API server: the kubeconfig as kubectl finds it
// (client-go's clientcmd), requests through internal/cluster/kube (client-go's
// rest client with only the API groups podstep reads, not the typed
// clientset, whose scheme's init every command paid), the pod, the ConfigMaps and Secrets it references, service
// account tokens through the TokenRequest API, the Node it is bound to and
// the other pods on that node. It hands the engine a manifest.Bundle, a
// node.Node and a volume.TokenSource: the engine does not know where they
// came from. After a run, View reads what the cluster says about the real
// pod (phase, container states, the kubelet's Events).
//
// Errors: an *AccessError (the API server denied a verb on a resource) is
// bad input (exit 2), an *UnreachableError (no answer) exit 3; both come
// before the engine starts, so nothing is left on the node.
package cluster

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// Options say which cluster to talk to, as kubectl's flags do.
type Options struct {
	// Kubeconfig is --kubeconfig: one file, used alone. Empty: the files of
	// $KUBECONFIG (merged), else ~/.kube/config, else the in-cluster
	// config of a pod's service account (KUBERNETES_SERVICE_HOST and the
	// mounted token), as kubectl and clientcmd's deferred loading do.
	Kubeconfig string
	// Context is --context: a context of the kubeconfig other than its
	// current-context.
	Context string
	// InCluster is --in-cluster: the config of the pod podstep runs in (its
	// service account's token and CA, KUBERNETES_SERVICE_HOST/PORT), and no
	// kubeconfig file: a fleet runner's.
	InCluster bool
	// Timeout bounds each request (0: 10 s).
	Timeout time.Duration
	// AllowExecPlugins is --allow-exec-plugins: run a kubeconfig's exec
	// credential plugin even from a file another user owns or may write.
	AllowExecPlugins bool
	// Stderr is where the line naming an exec credential plugin, and the
	// plugin's own stderr (sanitised), go (nil: os.Stderr).
	Stderr io.Writer
}

// homeFile is ~/.kube/config (clientcmd.RecommendedHomeFile; tests move it).
var homeFile = clientcmd.RecommendedHomeFile

// Client talks to one API server. It counts every request it sends.
type Client struct {
	// API is the API client (kube.New; kubefake over client-go's fake
	// clientset in unit tests).
	API kube.API
	// Server is the API server's URL, for messages.
	Server string
	// Context is the kubeconfig context used ("" in-cluster or in tests).
	Context string
	// Namespace is the context's namespace ("default" when it sets none):
	// the namespace of --pod NAME.
	Namespace string

	mu   sync.Mutex
	reqs []Request
}

// Request is one HTTP request sent to the API server.
type Request struct {
	Method string
	Path   string // URL path and query
	Status int    // HTTP status; 0 when no answer came
}

// Loaded is a kubeconfig loaded as kubectl loads it.
type Loaded struct {
	// Config is the client config of the context (or the in-cluster one).
	Config *rest.Config
	// Context is the context used ("" in-cluster).
	Context string
	// Namespace is the context's namespace ("default" when it sets none;
	// in a pod, the pod's namespace).
	Namespace string
}

// Load loads the kubeconfig as kubectl does (o.Kubeconfig alone, else the
// files of $KUBECONFIG merged, else ~/.kube/config, else the in-cluster
// config; o.Context over the current-context), with client-go's clientcmd
// deferred loading rules. It sends nothing. The one loader of podstep:
// run/plan --pod (Connect) and fleet use it. A kubeconfig that cannot be
// loaded, or a context that is not there, is an error for exit 2; so is
// a file over MaxKubeconfig, and an exec credential plugin from a file
// another user owns or may write (guardExec; unless o.AllowExecPlugins).
// An exec plugin is named on o.Stderr before it can run, and its stderr
// goes there sanitised.
func Load(o Options) (*Loaded, error) {
	if o.InCluster {
		return inCluster()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.Precedence) == 1 && rules.Precedence[0] == clientcmd.RecommendedHomeFile {
		rules.Precedence = []string{homeFile} // no $KUBECONFIG
	}
	rules.ExplicitPath = o.Kubeconfig
	files := rules.Precedence
	if o.Kubeconfig != "" {
		files = []string{o.Kubeconfig}
	}
	if err := checkFiles(files); err != nil {
		return nil, err
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config (in a pod, the service account's in-cluster config is used)")
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: namespace: %w", err)
	}
	ctxName := o.Context
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if err := guardExec(cfg, raw, ctxName, o); err != nil {
		return nil, err
	}
	return &Loaded{Config: cfg, Context: ctxName, Namespace: ns}, nil
}

// saDir is where a pod's service account token, CA and namespace are
// mounted (rest.InClusterConfig reads the first two from there).
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// inCluster is the config of the pod podstep runs in, as clientcmd's
// in-cluster fallback makes it (rest.InClusterConfig, the namespace file).
func inCluster() (*Loaded, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("--in-cluster: %w", err)
	}
	ns := "default"
	if b, err := os.ReadFile(saDir + "/namespace"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		ns = strings.TrimSpace(string(b))
	}
	return &Loaded{Config: cfg, Namespace: ns}, nil
}

// Connect loads the kubeconfig (Load) and makes a client. It sends nothing.
func Connect(o Options) (*Client, error) {
	l, err := Load(o)
	if err != nil {
		return nil, err
	}
	return newClient(l.Config, l.Context, l.Namespace, o.Timeout)
}

func newClient(cfg *rest.Config, ctxName, ns string, timeout time.Duration) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cfg.Timeout = timeout
	// A run sends a handful of requests at once: no client-side throttling.
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "podstep"
	c := &Client{Server: cfg.Host, Context: ctxName, Namespace: ns}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &counting{next: rt, c: c} })
	api, err := kube.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server %s: %w", cfg.Host, err)
	}
	c.API = api
	return c, nil
}

// NewForTest wraps an API (kubefake.New of client-go's fake clientset)
// for unit tests.
func NewForTest(api kube.API, server string) *Client {
	return &Client{API: api, Server: server, Namespace: "default"}
}

// Requests returns the HTTP requests sent so far, in order.
func (c *Client) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.reqs...)
}

// counting records each request (method, path and query, status).
type counting struct {
	next http.RoundTripper
	c    *Client
}

func (t *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	req := Request{Method: r.Method, Path: r.URL.RequestURI()}
	if resp != nil {
		req.Status = resp.StatusCode
	}
	t.c.mu.Lock()
	t.c.reqs = append(t.c.reqs, req)
	t.c.mu.Unlock()
	return resp, err
}
