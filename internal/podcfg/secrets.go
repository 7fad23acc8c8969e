package podcfg

import (
	corev1 "k8s.io/api/core/v1"
)

// Expansion is a string ContainerConfig builds from the container's
// environment that holds a Secret value: Value as it is sent, Shown the same
// string built with every Secret value replaced by a mask. podstep's
// redactor shows Shown wherever Value would appear.
type Expansion struct {
	Value, Shown string
	// SubPath is set for an expanded subPathExpr (podstep's messages about
	// the mount quote it as a path).
	SubPath bool
}

// SecretExpansions lists the strings ContainerConfig would send for c that
// hold Secret values: the Secret-sourced env values themselves, the env
// values, command and args whose $(VAR) references lead to them (through
// other variables too), and expanded subPathExprs, each with its masked
// form. It builds the environment twice, once with the Secrets' data and
// once with each non-empty value replaced by mask, and compares them.
// Missing sources are skipped, as in SecretEnvNames.
func SecretExpansions(pod *corev1.Pod, c *corev1.Container, in ContainerInput, o Options, mask string) []Expansion {
	if in.Env == nil {
		return nil
	}
	sent, _ := environment(pod, c, in, o, true)
	masked := in
	masked.Env = maskedSecrets{EnvSource: in.Env, mask: mask}
	shown, _ := environment(pod, c, masked, o, true)
	if len(sent.vars) != len(shown.vars) {
		return nil // cannot happen: both walk the same sources
	}
	var out []Expansion
	add := func(v, s string) {
		if v != "" && v != s {
			out = append(out, Expansion{Value: v, Shown: s})
		}
	}
	for i := range sent.vars {
		add(sent.vars[i].value, shown.vars[i].value)
	}
	for _, list := range [][]string{c.Command, c.Args} {
		for _, s := range list {
			add(sent.expand(s), shown.expand(s))
		}
	}
	for _, vm := range c.VolumeMounts {
		if vm.SubPathExpr != "" {
			v, err := sent.expandSubPath(vm.SubPathExpr)
			if err != nil {
				continue // ContainerConfig fails: nothing is sent
			}
			if s, _ := shown.expandSubPath(vm.SubPathExpr); v != s {
				out = append(out, Expansion{Value: v, Shown: s, SubPath: true})
			}
		}
	}
	return out
}

// maskedSecrets is an EnvSource whose Secrets hold mask for every non-empty value.
type maskedSecrets struct {
	EnvSource
	mask string
}

func (m maskedSecrets) Secret(namespace, name string) (*corev1.Secret, bool) {
	s, ok := m.EnvSource.Secret(namespace, name)
	if !ok || s == nil {
		return s, ok
	}
	out := &corev1.Secret{ObjectMeta: s.ObjectMeta, Type: s.Type, Data: map[string][]byte{}}
	for k, v := range secretData(s) {
		if v != "" {
			out.Data[k] = []byte(m.mask)
		} else {
			out.Data[k] = nil
		}
	}
	return out, true
}
