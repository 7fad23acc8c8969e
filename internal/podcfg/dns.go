package podcfg

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/limit"
	"github.com/podstep/podstep/internal/reason"
)

// DNS limits of pkg/apis/core/validation and the kubelet's dns configurer.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxSearchLen          = 253 // DNS1123SubdomainMaxLength
	maxResolvConfLength   = 10 * 1 << 20
)

var defaultDNSOptions = []string{"ndots:5"}

// podDNS mirrors pkg/kubelet/network/dns/dns.go GetPodDNS: start from the
// host's resolv.conf; ClusterFirst (or ClusterFirstWithHostNet) with cluster
// DNS → cluster servers + cluster searches + ndots:5; ClusterFirst without
// cluster DNS → MissingClusterDNS warning and the host's config (Default);
// ClusterFirst on hostNetwork → Default; None → empty; then pod.spec.dnsConfig
// is merged and the result trimmed to the resolver limits.
func podDNS(pod *corev1.Pod, o Options) (*runtimeapi.DNSConfig, []Warning, error) {
	var warnings []Warning
	cfg, err := hostDNSConfig(o.resolvConf())
	if err != nil {
		return nil, nil, err
	}
	policy := pod.Spec.DNSPolicy
	switch {
	case policy == corev1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case policy == corev1.DNSDefault || (policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork):
		// host resolv.conf as is
	default: // ClusterFirst, ClusterFirstWithHostNet, or an invalid policy (the kubelet falls back to ClusterFirst)
		if len(o.ClusterDNS) > 0 {
			cfg.Servers = append([]string(nil), o.ClusterDNS...)
			cfg.Searches = clusterSearches(cfg.Searches, pod.Namespace, o.ClusterDomain)
			cfg.Options = append([]string(nil), defaultDNSOptions...)
			break
		}
		nodeMsg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", corev1.DNSClusterFirst, corev1.DNSDefault)
		warnings = append(warnings, Warning{Reason: reason.MissingClusterDNS, Message: fmt.Sprintf("pod: %q. %s", formatPod(pod), nodeMsg)})
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		warnings = append(warnings, Warning{Reason: reason.DNSConfigForming, Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	var w *Warning
	cfg.Searches, w = searchFitsLimits(cfg.Searches)
	if w != nil {
		warnings = append(warnings, *w)
	}
	return cfg, warnings, nil
}

func clusterSearches(hostSearch []string, namespace, domain string) []string {
	if domain == "" {
		return hostSearch
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return omitDuplicates(append(s, hostSearch...))
}

func searchFitsLimits(s []string) ([]string, *Warning) {
	exceeded := false
	if len(s) > maxDNSSearchPaths {
		s = s[:maxDNSSearchPaths]
		exceeded = true
	}
	kept := s[:0:0]
	for _, x := range s {
		if len(x) > maxSearchLen {
			exceeded = true
			continue
		}
		kept = append(kept, x)
	}
	s = kept
	if l := len(strings.Join(s, " ")); l > maxDNSSearchListChars {
		cut, cutLen := 0, 0
		for i := len(s) - 1; i >= 0; i-- {
			cutLen += len(s[i]) + 1
			cut++
			if l-cutLen <= maxDNSSearchListChars {
				break
			}
		}
		s = s[:len(s)-cut]
		exceeded = true
	}
	if !exceeded {
		return s, nil
	}
	return s, &Warning{Reason: reason.DNSConfigForming, Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(s, " ")}
}

// hostDNSConfig reads a resolv.conf like the kubelet's parseResolvConf:
// nameservers accumulate, the last search line wins (trailing dots trimmed,
// "." dropped), options accumulate with later same-name options replacing
// earlier ones.
func hostDNSConfig(path string) (*runtimeapi.DNSConfig, error) {
	// Read at most the kubelet's bound (a device such as /dev/zero is
	// refused after 64 KiB, not read until memory runs out).
	data, err := limit.ReadFile(path, maxResolvConfLength, "a resolv.conf")
	if err != nil {
		return nil, fmt.Errorf("open resolv.conf: %w", err)
	}
	cfg := &runtimeapi.DNSConfig{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				cfg.Servers = append(cfg.Servers, f[1])
			}
		case "search":
			cfg.Searches = nil
			for _, s := range f[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = appendOptions(cfg.Options, f[1:]...)
		}
	}
	return cfg, nil
}

func optName(o string) string {
	name, _, _ := strings.Cut(o, ":")
	return name
}

func appendOptions(opts []string, add ...string) []string {
	for _, a := range add {
		replaced := false
		for i, o := range opts {
			if optName(o) == optName(a) {
				opts[i] = a
				replaced = true
				break
			}
		}
		if !replaced {
			opts = append(opts, a)
		}
	}
	return opts
}

// mergeDNSOptions merges pod dnsConfig options into the existing ones by
// name. (The kubelet builds the result from a map, so its order is random;
// podstep keeps first-seen order.)
func mergeDNSOptions(existing []string, add []corev1.PodDNSConfigOption) []string {
	out := append([]string(nil), existing...)
	for _, o := range add {
		s := o.Name
		if o.Value != nil && *o.Value != "" {
			s += ":" + *o.Value
		}
		out = appendOptions(out, s)
	}
	return out
}

func omitDuplicates(s []string) []string {
	seen := map[string]bool{}
	out := s[:0:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// formatPod is pkg/kubelet/util/format.Pod: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
