package cri

import (
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Mask replaces secret values in everything podstep records or prints.
const Mask = "<redacted>"

// Redactor removes secrets from recorded CRI messages and from free text
// (step results, events, runtime errors, log lines). It masks:
//
//   - registry credentials in AuthConfig, always;
//   - the whole value of environment variables named with AddSecretEnv
//     (values that came from Secrets), in container configs;
//   - Secret values given to AddSecrets, by value (see MinSubstringLen for
//     what happens to short ones);
//   - strings built by expanding $(VAR) references to Secret-sourced
//     variables, given to AddExpansion, shown with only the Secret part
//     masked ("postgres://u:<redacted>@db").
//
// It is safe for concurrent use; what it masks is precomputed when secrets
// are added, so Redact and Text do no setup work.
type Redactor struct {
	mu         sync.Mutex // serialises the Add methods
	secretEnv  map[string]bool
	values     map[string]bool
	expansions map[string]string // value as sent → as shown
	subPaths   map[string]bool   // expansions that are subPathExprs
	set        atomic.Pointer[maskSet]
}

// AddSecretEnv marks environment variable names whose values come from a Secret.
func (r *Redactor) AddSecretEnv(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, n := range names {
		if !r.secretEnv[n] {
			if r.secretEnv == nil {
				r.secretEnv = map[string]bool{}
			}
			r.secretEnv[n] = true
			changed = true
		}
	}
	if changed {
		r.rebuild()
	}
}

// AddSecrets adds Secret values (decoded) to mask wherever they appear.
// Empty values are ignored: there is nothing to hide.
func (r *Redactor) AddSecrets(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, v := range values {
		if v != "" && !r.values[v] {
			if r.values == nil {
				r.values = map[string]bool{}
			}
			r.values[v] = true
			changed = true
		}
	}
	if changed {
		r.rebuild()
	}
}

// AddExpansion records that value, a string podstep sends, was built by
// expanding $(VAR) references to Secret-sourced variables, and that it is to
// be shown as shown (the same expansion with each Secret value replaced by
// Mask). Pairs with value == shown or an empty value are ignored.
func (r *Redactor) AddExpansion(value, shown string) { r.addExpansion(value, shown, false) }

// AddSubPath is AddExpansion for an expanded subPathExpr. A short one is
// also masked in free text where it is a whole path component or quoted
// ("/<redacted>", "`<redacted>`"): podstep's own messages about the mount
// quote it so.
func (r *Redactor) AddSubPath(value, shown string) { r.addExpansion(value, shown, true) }

func (r *Redactor) addExpansion(value, shown string, subPath bool) {
	if value == "" || value == shown {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.expansions[value]; ok && old == shown && (!subPath || r.subPaths[value]) {
		return
	}
	if r.expansions == nil {
		r.expansions, r.subPaths = map[string]string{}, map[string]bool{}
	}
	r.expansions[value] = shown
	if subPath {
		r.subPaths[value] = true
	}
	r.rebuild()
}

// rebuild precomputes the mask set; r.mu is held.
func (r *Redactor) rebuild() {
	r.set.Store(newMaskSet(r.secretEnv, r.values, r.expansions, r.subPaths))
}

// masks is the current mask set (never nil).
func (r *Redactor) masks() *maskSet {
	if r == nil {
		return emptyMaskSet
	}
	if m := r.set.Load(); m != nil {
		return m
	}
	return emptyMaskSet
}

// Redact returns a copy of m safe to record and show; m itself is untouched.
// Every string and bytes field of the copy, at any depth, is masked as Text
// masks free text; in addition, in the fields where podstep puts values
// from the environment (command, args, env values, mount host paths), a
// whole field that is a Secret value or a recorded expansion is masked
// whatever its length, and so is a short expansion ending a path.
func (r *Redactor) Redact(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	set := r.masks()
	c := proto.Clone(m)
	switch v := c.(type) {
	case *runtimeapi.PullImageRequest:
		redactAuth(v.Auth)
	case *runtimeapi.CreateContainerRequest:
		set.redactEnv(v.Config)
	case *runtimeapi.ContainerStatusResponse:
		// Verbose runtime info can echo the whole config, environment
		// included, in a form the value masking cannot follow (JSON with
		// escapes): dropped whole.
		if set.any() {
			for k := range v.Info {
				v.Info[k] = Mask
			}
		}
	}
	runMaskers(c)
	if set.active() {
		set.walk(c.ProtoReflect())
	}
	return c
}

// Response is Redact for an answer of the runtime: when the pod has no
// secret at all, nothing in it is masked and the answer itself is
// returned, not a copy; so is one in which nothing is found to mask. Answers are read, never changed, by the engine
// and by the call log, so both may hold it; a copy of every answer was
// the largest cost of a relist of a big pod (a ListContainers answer of
// 1,000 containers copied ten times a second, issue 34).
func (r *Redactor) Response(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	set := r.masks()
	if v, ok := m.(*runtimeapi.ContainerStatusResponse); ok && set.any() && len(v.Info) > 0 {
		return r.Redact(m)
	}
	if !set.active() || !set.changes(m.ProtoReflect(), nil) {
		return m
	}
	return r.Redact(m)
}

// Text masks the Secret values and recorded expansions in free text: step
// summaries, details, warnings and messages, events, runtime errors, log
// lines.
func (r *Redactor) Text(s string) string {
	return r.masks().text(s)
}

// Error returns err, or when its text carries a secret, an error with the
// same gRPC code and the masked text.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	set := r.masks()
	if !set.active() {
		return err
	}
	msg := err.Error()
	if set.text(msg) == msg {
		return err
	}
	if s, ok := status.FromError(err); ok {
		return status.Error(s.Code(), set.text(s.Message()))
	}
	return redactedError{msg: set.text(msg)}
}

// redactedError is an error whose text was masked.
type redactedError struct{ msg string }

func (e redactedError) Error() string { return e.msg }

func redactAuth(a *runtimeapi.AuthConfig) {
	if a == nil {
		return
	}
	for _, f := range []*string{&a.Password, &a.Auth, &a.IdentityToken, &a.RegistryToken} {
		if *f != "" {
			*f = Mask
		}
	}
}
