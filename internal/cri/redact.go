package cri

import (
	"sync"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Mask replaces secret values in everything podstep records or prints.
const Mask = "<redacted>"

// Redactor removes secrets from recorded CRI messages. Registry credentials
// are always removed; environment variables named with AddSecretEnv (values
// that came from Secrets) are masked in container configs.
type Redactor struct {
	mu        sync.RWMutex
	secretEnv map[string]bool
}

// AddSecretEnv marks environment variable names whose values come from a Secret.
func (r *Redactor) AddSecretEnv(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secretEnv == nil {
		r.secretEnv = map[string]bool{}
	}
	for _, n := range names {
		r.secretEnv[n] = true
	}
}

// Redact returns a copy of m safe to record and show; m itself is untouched.
func (r *Redactor) Redact(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	c := proto.Clone(m)
	switch v := c.(type) {
	case *runtimeapi.PullImageRequest:
		redactAuth(v.Auth)
	case *runtimeapi.CreateContainerRequest:
		r.redactContainer(v.Config)
	case *runtimeapi.ContainerStatusResponse:
		r.redactInfo(v.Info)
	}
	return c
}

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

func (r *Redactor) redactContainer(cfg *runtimeapi.ContainerConfig) {
	if cfg == nil {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, kv := range cfg.Envs {
		if r.secretEnv[kv.Key] {
			kv.Value = []byte(Mask)
		}
	}
}

// redactInfo drops verbose runtime info, which can echo the whole config
// (environment included).
func (r *Redactor) redactInfo(info map[string]string) {
	r.mu.RLock()
	n := len(r.secretEnv)
	r.mu.RUnlock()
	if n == 0 {
		return
	}
	for k := range info {
		info[k] = Mask
	}
}
