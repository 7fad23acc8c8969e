package podcfg

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/expansion"
)

// envVar is one resolved variable and whether its value came from a Secret.
type envVar struct {
	name, value string
	secret      bool
}

// envList keeps variables in first-definition order, later definitions
// replacing the value (the kubelet uses a map; see the package doc).
type envList struct {
	vars  []envVar
	index map[string]int
	// services are the service variables $(VAR) references see after
	// the container's own (expansion.MappingFuncFor(tmpEnv, serviceEnv)),
	// until environment appends them.
	services map[string]string
}

func (l *envList) set(name, value string, secret bool) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[name]; ok {
		l.vars[i].value, l.vars[i].secret = value, secret
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, envVar{name, value, secret})
}

func (l *envList) lookup(name string) (string, bool) {
	i, ok := l.index[name]
	if !ok {
		v, ok := l.services[name]
		return v, ok
	}
	return l.vars[i].value, true
}

// expand replaces $(VAR) references in s with the variables defined so far,
// as makeEnvironmentVariables and ExpandContainerCommandAndArgs do
// (expansion.MappingFuncFor: an unknown variable is left as written).
func (l *envList) expand(s string) string {
	return expansion.Expand(s, expansion.MappingFuncFor(l.lookup))
}

// expandSubPath mirrors container/helpers.go ExpandContainerVolumeMounts:
// every variable subPathExpr names must be defined and non-empty, else the
// error is "missing value for A, B" (sorted).
func (l *envList) expandSubPath(expr string) (string, error) {
	var missing []string
	out := expansion.Expand(expr, func(name string) string {
		v, ok := l.lookup(name)
		if (!ok || v == "") && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", configErrorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// environment mirrors kubelet_pods.go makeEnvironmentVariables: envFrom
// sources first (configMap / secret data, with prefix), then env in order
// ($(VAR) expanded against what is defined so far; valueFrom resolved).
// Missing non-optional configMaps, secrets and keys give the kubelet's
// errors. With lenient set, errors are skipped (used by SecretEnvNames).
//
// Then the service variables (serviceEnv: the kubernetes Service's always,
// the namespace's with enableServiceLinks) that the container does not
// define itself, after its own, as makeEnvironmentVariables appends "the
// remaining service env vars"; $(VAR) in env values sees them too. The
// Services are the source's (run --pod reads them from the API server);
// a source without (a manifest, no API server) gives none, as a kubelet
// without a service lister (the standalone kubelet's traces send none).
func environment(pod *corev1.Pod, c *corev1.Container, in ContainerInput, o Options, lenient bool) (*envList, error) {
	env := &envList{}
	src := in.Env
	var services []envVar
	if src != nil {
		links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
		services = serviceEnv(pod.Namespace, links, src.ServiceList())
	}
	for _, v := range services {
		if env.services == nil {
			env.services = map[string]string{}
		}
		env.services[v.name] = v.value
	}
	fail := func(err error) error {
		if lenient {
			return nil
		}
		return err
	}
	getCM := func(name string) (*corev1.ConfigMap, bool) {
		if src == nil {
			return nil, false
		}
		return src.ConfigMap(pod.Namespace, name)
	}
	getSecret := func(name string) (*corev1.Secret, bool) {
		if src == nil {
			return nil, false
		}
		return src.Secret(pod.Namespace, name)
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, ok := getCM(ef.ConfigMapRef.Name)
			if !ok {
				if isTrue(ef.ConfigMapRef.Optional) {
					continue
				}
				if err := fail(configErrorf("configmap %q not found", ef.ConfigMapRef.Name)); err != nil {
					return nil, err
				}
				continue
			}
			for _, k := range sortedKeys(cm.Data) {
				env.set(ef.Prefix+k, cm.Data[k], false)
			}
		case ef.SecretRef != nil:
			s, ok := getSecret(ef.SecretRef.Name)
			if !ok {
				if isTrue(ef.SecretRef.Optional) {
					continue
				}
				if err := fail(configErrorf("secret %q not found", ef.SecretRef.Name)); err != nil {
					return nil, err
				}
				continue
			}
			for _, k := range sortedKeys(secretData(s)) {
				env.set(ef.Prefix+k, secretData(s)[k], true)
			}
		}
	}
	for _, ev := range c.Env {
		val, secret := ev.Value, false
		if val != "" {
			val = env.expand(val)
		} else if vf := ev.ValueFrom; vf != nil {
			var err error
			switch {
			case vf.FieldRef != nil:
				val, err = fieldRefValue(vf.FieldRef, pod, in, o)
			case vf.ResourceFieldRef != nil:
				val, err = resourceFieldRefValue(vf.ResourceFieldRef, pod, c, o)
			case vf.ConfigMapKeyRef != nil:
				ref := vf.ConfigMapKeyRef
				cm, ok := getCM(ref.Name)
				if !ok {
					if isTrue(ref.Optional) {
						continue
					}
					err = configErrorf("configmap %q not found", ref.Name)
					break
				}
				v, ok := cm.Data[ref.Key]
				if !ok {
					if isTrue(ref.Optional) {
						continue
					}
					err = configErrorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
					break
				}
				val = v
			case vf.SecretKeyRef != nil:
				ref := vf.SecretKeyRef
				s, ok := getSecret(ref.Name)
				if !ok {
					if isTrue(ref.Optional) {
						continue
					}
					err = configErrorf("secret %q not found", ref.Name)
					break
				}
				v, ok := secretData(s)[ref.Key]
				if !ok {
					if isTrue(ref.Optional) {
						continue
					}
					err = configErrorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
					break
				}
				val, secret = v, true
			}
			if err != nil {
				if err := fail(err); err != nil {
					return nil, err
				}
				continue
			}
		}
		env.set(ev.Name, val, secret)
	}
	env.services = nil
	for _, v := range services {
		if _, ok := env.index[v.name]; !ok {
			env.set(v.name, v.value, false)
		}
	}
	return env, nil
}

// SecretEnvNames lists the container's env var names whose values come from
// Secrets (secretKeyRef, envFrom secretRef), in the order ContainerConfig
// sends them; podstep redacts their values in its output. Missing sources are
// skipped.
func SecretEnvNames(pod *corev1.Pod, c *corev1.Container, src EnvSource) []string {
	env, _ := environment(pod, c, ContainerInput{Container: c, Env: src}, Options{}, true)
	var out []string
	for _, v := range env.vars {
		if v.secret {
			out = append(out, v.name)
		}
	}
	return out
}

// secretData merges stringData over data (the API server does this on write;
// manifests given to podstep may still carry stringData).
func secretData(s *corev1.Secret) map[string]string {
	m := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		m[k] = string(v)
	}
	for k, v := range s.StringData {
		m[k] = v
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isTrue(b *bool) bool { return b != nil && *b }
