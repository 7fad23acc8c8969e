package cluster

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// AccessError is a request the API server refused for the credentials
// used (403 Forbidden, 401 Unauthorized): one clear message naming the verb
// and the resource, and what podstep needs. It is bad input: exit 2.
type AccessError struct {
	Server    string
	Verb      string // get, list, create
	Resource  string // pods, serviceaccounts/token, ...
	Namespace string // "" for cluster-scoped objects and all-namespace lists
	Name      string // "" for lists
	Status    int    // 401 or 403
	Err       error
}

func (e *AccessError) Error() string {
	var sb strings.Builder
	what := "denied"
	if e.Status == 401 {
		what = "did not accept the credentials for"
	}
	fmt.Fprintf(&sb, "API server %s %s %q on %q", e.Server, what, e.Verb, e.Resource)
	if e.Name != "" {
		fmt.Fprintf(&sb, " (%s)", e.Name)
	}
	if e.Namespace != "" {
		fmt.Fprintf(&sb, " in namespace %q", e.Namespace)
	}
	fmt.Fprintf(&sb, ": podstep needs %s %s: see deploy/clusterrole.yaml", e.Verb, e.Resource)
	if e.Err != nil {
		fmt.Fprintf(&sb, " (the API server said: %s)", clean(e.Err.Error()))
	}
	return sb.String()
}

func (e *AccessError) Unwrap() error { return e.Err }

// UnreachableError is an API server that did not answer (connection
// refused, timeout, TLS failure): exit 3.
type UnreachableError struct {
	Server string
	What   string // what podstep was doing
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("API server %s unreachable (%s): %s", e.Server, e.What, clean(e.Err.Error()))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// classify turns a client-go error into an *AccessError, an
// *UnreachableError, or a wrapped error; a NotFound is returned as is.
func (c *Client) classify(err error, verb, resource, ns, name string) error {
	if err == nil || apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		st := 403
		if apierrors.IsUnauthorized(err) {
			st = 401
		}
		return &AccessError{Server: c.Server, Verb: verb, Resource: resource, Namespace: ns, Name: name, Status: st, Err: err}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		// The API server answered with another error (500, 429...).
		return fmt.Errorf("API server %s: %s %s %s: %w", c.Server, verb, resource, name, err)
	}
	// No API status: the request got no answer.
	what := verb + " " + resource
	if name != "" {
		what += " " + name
	}
	return &UnreachableError{Server: c.Server, What: what, Err: err}
}

// clean drops control characters from text that came from the API server
// (it is untrusted and may reach a terminal).
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

func asAccess(err error, target **AccessError) bool {
	return err != nil && errors.As(err, target)
}

func asUnreachable(err error, target **UnreachableError) bool {
	return err != nil && errors.As(err, target)
}
