package watch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxListed is how many names a "spec vs sent" list shows before "…".
const maxListed = 4

// maxValue is the longest value (an image, a command) a "spec vs sent"
// line shows.
const maxValue = 80

// specVsSent compares a container of the desired spec with the config the
// kubelet sent in CreateContainer, where a node engineer cares: the image,
// command and args, the working dir, the env names (never values), the
// mounts, the ports (in the sandbox's port mappings) and a sidecar's
// restartPolicy, which the CRI does not carry. sb is the RunPodSandbox
// config (nil if unseen); text masks secrets. "" when nothing differs.
func specVsSent(c *corev1.Container, init bool, cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig, text func(string) string) string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }

	sent := cfg.GetImage().GetUserSpecifiedImage()
	if sent == "" {
		sent = cfg.GetImage().GetImage()
	}
	if c.Image != sent {
		add("image: spec %s, sent %s", value(c.Image, text), value(sent, text))
	}
	for _, f := range []struct {
		what       string
		spec, sent []string
	}{{"command", c.Command, cfg.GetCommand()}, {"args", c.Args, cfg.GetArgs()}} {
		if slices.Equal(f.spec, f.sent) {
			continue
		}
		if strings.Contains(strings.Join(f.spec, " "), "$(") {
			// Expanded by the kubelet (expansion.Expand): the values may
			// be a Secret's, so only say so.
			add("%s: $(VAR) references expanded by the kubelet", f.what)
			continue
		}
		add("%s: spec %s, sent %s", f.what, value(fmt.Sprintf("%q", f.spec), text), value(fmt.Sprintf("%q", f.sent), text))
	}
	if c.WorkingDir != cfg.GetWorkingDir() {
		add("workingDir: spec %s, sent %s", value(c.WorkingDir, text), value(cfg.GetWorkingDir(), text))
	}

	// Env: names only.
	var specEnv, sentEnv []string
	for _, e := range c.Env {
		specEnv = append(specEnv, e.Name)
	}
	for _, e := range cfg.GetEnvs() {
		sentEnv = append(sentEnv, e.GetKey())
	}
	if extra := minus(sentEnv, specEnv); len(extra) > 0 {
		sort.Strings(extra) // the kubelet's service-link env comes from a map
		from := "the kubelet's service links"
		if len(c.EnvFrom) > 0 {
			from = "envFrom and the kubelet's service links"
		}
		add("env: +%d names from %s (%s)", len(extra), from, listed(extra, text))
	}
	if missing := minus(specEnv, sentEnv); len(missing) > 0 {
		add("env: %d names of the spec not sent (%s)", len(missing), listed(missing, text))
	}

	// Mounts, by container path.
	var specMounts, sentMounts []string
	for _, m := range c.VolumeMounts {
		specMounts = append(specMounts, m.MountPath)
	}
	for _, m := range cfg.GetMounts() {
		sentMounts = append(sentMounts, m.GetContainerPath())
	}
	if extra := minus(sentMounts, specMounts); len(extra) > 0 {
		add("mounts: +%d from the kubelet (%s)", len(extra), listed(extra, text))
	}
	if missing := minus(specMounts, sentMounts); len(missing) > 0 {
		add("mounts: %d of the spec not sent (%s)", len(missing), listed(missing, text))
	}

	// Ports: the sandbox's port mappings hold the regular containers'
	// (MakePortMappings, pkg/kubelet/container/helpers.go).
	if len(c.Ports) > 0 {
		if init {
			add("ports: %d not mapped (the kubelet maps only regular containers' ports)", len(c.Ports))
		} else if sb != nil {
			var missing []string
			for _, p := range c.Ports {
				if !mapped(sb.GetPortMappings(), p) {
					missing = append(missing, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
				}
			}
			if len(missing) > 0 {
				add("ports: %d not in the sandbox's port mappings (%s)", len(missing), listed(missing, text))
			}
		}
	}
	if init && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		add("restartPolicy: Always, a sidecar (not in the CRI config: the kubelet starts the next init container once this one started)")
	}
	return strings.Join(out, "; ")
}

// mapped says whether port p of the spec is among the mappings.
func mapped(ms []*runtimeapi.PortMapping, p corev1.ContainerPort) bool {
	for _, m := range ms {
		if m.GetContainerPort() == p.ContainerPort && m.GetHostPort() == p.HostPort && strings.EqualFold(m.GetProtocol().String(), string(p.Protocol)) {
			return true
		}
	}
	return false
}

// minus is a without b's elements, in a's order, each once.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// listed is up to maxListed names, then "…".
func listed(names []string, text func(string) string) string {
	more := ""
	if len(names) > maxListed {
		names, more = names[:maxListed], ", …"
	}
	var out []string
	for _, n := range names {
		out = append(out, value(n, text))
	}
	return strings.Join(out, ", ") + more
}

// value is s redacted and cut to maxValue runes.
func value(s string, text func(string) string) string {
	if text != nil {
		s = text(s)
	}
	if s == "" {
		return `""`
	}
	if r := []rune(s); len(r) > maxValue {
		s = string(r[:maxValue]) + "…"
	}
	return s
}
