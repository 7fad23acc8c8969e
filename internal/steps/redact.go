package steps

import (
	"encoding/base64"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/credential"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podcfg"
)

// setupRedactor prepares the one redactor for the calls the client records
// and for everything the engine shows (planned requests, step results, pod
// events and status): registry credentials, Secret-sourced env vars by name,
// and every Secret value of the manifest by value, so that no Secret leaves
// the engine whatever path it takes (an env var, a $(VAR) expansion, a
// container's output, a runtime error).
func (e *Engine) setupRedactor() {
	e.redactor = &cri.Redactor{}
	if e.client != nil {
		e.redactor = e.client.Redactor
	}
	b := e.bundle
	for _, list := range [][]corev1.Container{b.Pod.Spec.InitContainers, b.Pod.Spec.Containers} {
		for i := range list {
			e.redactor.AddSecretEnv(podcfg.SecretEnvNames(b.Pod, &list[i], b)...)
		}
	}
	e.redactor.AddSecrets(bundleSecretValues(e)...)
	e.tracker.SetRedact(e.redactor.Text)
}

// bundleSecretValues are the values of every Secret in the manifest, used by
// the pod or not: data and stringData, and for docker config Secrets also
// each registry password and user:password auth.
func bundleSecretValues(e *Engine) []string {
	var out []string
	for _, s := range e.bundle.Secrets {
		for _, v := range s.Data {
			out = append(out, string(v))
		}
		for _, v := range s.StringData {
			out = append(out, v)
		}
		var kr credential.Keyring
		if kr.Add(s) != nil {
			continue
		}
		for _, en := range kr.Entries() {
			out = append(out, en.Password)
			if en.Password != "" {
				out = append(out, base64.StdEncoding.EncodeToString([]byte(en.Username+":"+en.Password)))
			}
		}
	}
	return out
}

// noteExpansions tells the redactor which strings of c's config hold
// Secret values ($(VAR) expansions, subPathExpr) and how to show them. They
// depend on the pod IPs (status.podIP references), so they are computed
// again only when those change.
func (e *Engine) noteExpansions(c *containerRuntime, ips []string) {
	key := strings.Join(ips, ",")
	if c.expanded && c.expandedFor == key {
		return
	}
	c.expanded, c.expandedFor = true, key
	in := podcfg.ContainerInput{Container: c.spec, Init: c.init, PodIP: first(ips), PodIPs: ips, Env: e.bundle}
	for _, x := range podcfg.SecretExpansions(e.pod, c.spec, in, e.opts.Config, cri.Mask) {
		if x.SubPath {
			e.redactor.AddSubPath(x.Value, x.Shown)
		} else {
			e.redactor.AddExpansion(x.Value, x.Shown)
		}
	}
}

// redactResult masks secrets in what a step found, before it is stored
// and shown.
func (e *Engine) redactResult(r Result) Result {
	t := e.redactor.Text
	r.Summary, r.Message = t(r.Summary), t(r.Message)
	if len(r.Warnings) > 0 {
		w := make([]string, len(r.Warnings))
		for i := range r.Warnings {
			w[i] = t(r.Warnings[i])
		}
		r.Warnings = w
	}
	if len(r.Details) > 0 {
		d := make([]Detail, len(r.Details))
		for i, x := range r.Details {
			d[i] = Detail{Key: t(x.Key), Value: t(x.Value)}
		}
		r.Details = d
	}
	if r.Err != nil {
		if msg := t(r.Err.Error()); msg != r.Err.Error() {
			r.Err = &maskedError{msg: msg, err: r.Err}
		}
	}
	return r
}

// maskedError is a step's error with its text masked.
type maskedError struct {
	msg string
	err error
}

func (m *maskedError) Error() string { return m.msg }

// Unwrap keeps errors.Is and errors.As working.
func (m *maskedError) Unwrap() error { return m.err }

// Redactor is the engine's redactor, for frontends that show text the
// engine did not produce (a container's log).
func (e *Engine) Redactor() *cri.Redactor { return e.redactor }
