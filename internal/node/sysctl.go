package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"

	"github.com/podstep/podstep/internal/reason"
)

// SafeSysctls are the kubelet's safe sysctls
// (pkg/kubelet/sysctl/safe_sysctls.go): the legacy list, always allowed,
// and the newer ones the kubelet allows on kernels that namespace them
// (ip_local_reserved_ports ≥ 3.16, tcp_rmem/tcp_wmem ≥ 4.15), which podstep
// assumes.
var SafeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// validateSysctl mirrors patternAllowlist.validateSysctl
// (pkg/kubelet/sysctl/allowlist.go) over the safe list plus
// --allowed-unsafe-sysctls.
func validateSysctl(name string, allowed []string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	nsErr := func(ns utilsysctl.Namespace) error {
		if ns == utilsysctl.IPCNamespace && hostIPC {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		if ns == utilsysctl.NetNamespace && hostNet {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	for _, pattern := range append(append([]string(nil), SafeSysctls...), allowed...) {
		ns, p, prefixed := utilsysctl.GetNamespace(pattern)
		if ns == utilsysctl.UnknownNamespace {
			continue // NewAllowlist refuses such a pattern at kubelet start
		}
		if (prefixed && strings.HasPrefix(name, p)) || (!prefixed && name == p) {
			return nsErr(ns)
		}
	}
	return fmt.Errorf("%q not allowlisted", name)
}

// admitSysctls mirrors patternAllowlist.Admit.
func admitSysctls(pod *corev1.Pod, n *Node, v *Verdict) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		v.add("sysctl", "sysctls", true, "the pod sets none")
		return true
	}
	var names []string
	for _, s := range sc.Sysctls {
		if err := validateSysctl(s.Name, n.AllowedUnsafeSysctls, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			v.add("sysctl", "sysctls", false, "%s: %v (safe list + --allowed-unsafe-sysctls %v)", s.Name, err, n.AllowedUnsafeSysctls)
			v.reject(reason.SysctlForbidden, fmt.Sprintf("forbidden sysctl: %v", err))
			return false
		}
		names = append(names, s.Name)
	}
	v.add("sysctl", "sysctls", true, "%s allowed", strings.Join(names, ", "))
	return true
}
