package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// Tokens is the token manager of a run (the kubelet's token.Manager,
// pkg/kubelet/token/token_manager.go): GetServiceAccountToken asks the API
// server's TokenRequest API (POST serviceaccounts/NAME/token) once per key
// and keeps the answer, keyed as the kubelet's keyFunc keys it (service
// account, namespace, audiences, expirationSeconds, bound object). Resolve
// asks for the pod's tokens before the engine starts, so that a denied
// TokenRequest stops the run before anything is made; the volume plugin then
// finds them here. It implements volume.TokenSource.
//
// The engine runs the pod under podstep's own UID (ReplayUID), so that it
// never meets the kubelet's; a request bound to that UID is bound to the
// cluster's pod (BoundUID) instead, as the API server checks the bound
// pod's name and UID. With no BoundUID (a manifest whose pod is not in the
// cluster), the token is bound to nothing.
type Tokens struct {
	c *Client
	// ReplayUID is the UID the engine gives the pod; BoundUID the
	// cluster pod's ("" when the cluster has no such pod).
	ReplayUID, BoundUID types.UID

	mu    sync.Mutex
	cache map[string]tokenAnswer
}

type tokenAnswer struct {
	tr  *authenticationv1.TokenRequest
	err error
}

// NewTokens makes the token manager of one run.
func (c *Client) NewTokens(replayUID, boundUID types.UID) *Tokens {
	return &Tokens{c: c, ReplayUID: replayUID, BoundUID: boundUID, cache: map[string]tokenAnswer{}}
}

// keyFunc mirrors the kubelet's token manager keyFunc.
func keyFunc(name, namespace string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}

// GetServiceAccountToken returns the token for the request, from the cache
// or from the API server. Its errors are the kubelet's: "failed to fetch
// token: <the API server's error>"; an *AccessError or *UnreachableError is
// kept inside for errors.As.
func (t *Tokens) GetServiceAccountToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := keyFunc(name, namespace, tr)
	t.mu.Lock()
	a, ok := t.cache[key]
	t.mu.Unlock()
	if !ok {
		a = t.fetch(context.Background(), namespace, name, tr)
		t.mu.Lock()
		t.cache[key] = a
		t.mu.Unlock()
	}
	if a.err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", a.err)
	}
	return a.tr, nil
}

// Values returns every token fetched, for the redactor.
func (t *Tokens) Values() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, a := range t.cache {
		if a.tr != nil {
			out = append(out, a.tr.Status.Token)
		}
	}
	return out
}

func (t *Tokens) fetch(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) tokenAnswer {
	req := tr.DeepCopy()
	if ref := req.Spec.BoundObjectRef; ref != nil && ref.Kind == "Pod" && ref.UID == t.ReplayUID {
		if t.BoundUID == "" {
			req.Spec.BoundObjectRef = nil
		} else {
			ref.UID = t.BoundUID
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := &authenticationv1.TokenRequest{}
	err := t.c.API.Create(ctx, kube.ServiceAccounts, namespace, name, "token", req, out)
	if err != nil {
		return tokenAnswer{err: t.c.classify(err, "create", "serviceaccounts/token", namespace, name)}
	}
	if out.Status.Token == "" {
		return tokenAnswer{err: fmt.Errorf("the API server returned an empty token")}
	}
	return tokenAnswer{tr: out}
}
