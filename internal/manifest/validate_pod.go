package manifest

import (
	"fmt"
	"math"
	"regexp"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// uidRE is podstep's rule for a metadata.uid given in the manifest: 1 to 63
// letters, digits and '-', starting and ending with a letter or digit. It
// takes the UUIDs the API server generates and the 32 hex characters podstep
// (and the kubelet, for static pods) derive. The API server replaces any
// UID a client sends with a new UUID (FillObjectMetaSystemFields,
// k8s.io/apiserver) and the kubelet takes a static pod's UID as written
// (pkg/kubelet/config/common.go applyDefaults); podstep names directories after it
// (<root-dir>/pods/<uid>, <log-dir>/<namespace>_<name>_<uid>) and cgroups
// (pod<uid>), so it must be a plain path component: no '/', no '.', no
// '..', no NUL, nothing a shell or systemd would treat specially.
var uidRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$`) })

const expectUID = `expected 1 to 63 letters, digits and '-', starting and ending with a letter or digit, such as a UUID ("0b6c1d2e-3f40-4a5b-8c7d-9e0f1a2b3c4d"), or no uid: podstep then derives one from the document`

// validateUID checks a Pod's metadata.uid against uidRE.
func validateUID(uid types.UID) *fieldErr {
	if !uidRE().MatchString(string(uid)) {
		return fe("metadata.uid", "invalid value %q: podstep names directories and cgroups after the UID (<root-dir>/pods/<uid>), so it must be a plain file name; %s", shorten(string(uid), 80), expectUID)
	}
	return nil
}

// sysctlRE is the API server's sysctl name format (SysctlContainSlashFmt).
var sysctlRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
})

const sysctlMaxLength = 253

// validatePodSpecExtras checks the PodSpec fields validatePod does not, as
// ValidatePodSpec does: hostname and subdomain, overhead and pod-level
// resources, sysctls, activeDeadlineSeconds' upper bound, probes and hooks.
func validatePodSpecExtras(s *corev1.PodSpec) *fieldErr {
	if a := s.ActiveDeadlineSeconds; a != nil && *a > math.MaxInt32 {
		return fe("spec.activeDeadlineSeconds", "invalid value %d: must be between 1 and %d, inclusive", *a, math.MaxInt32)
	}
	for _, n := range []struct{ field, v string }{{"spec.hostname", s.Hostname}, {"spec.subdomain", s.Subdomain}} {
		if n.v != "" && len(validation.IsDNS1123Label(n.v)) > 0 {
			return fe(n.field, "invalid value %q; %s", shorten(n.v, 80), expectLabel)
		}
	}
	// validateOverhead: the checks of container limits.
	if e := validateResources(&corev1.ResourceRequirements{Limits: s.Overhead}, "spec.overhead"); e != nil {
		e.field = "spec.overhead" + e.field[len("spec.overhead.limits"):]
		return e
	}
	if e := validatePodFeatures(s); e != nil {
		return e
	}
	if e := validateHostUsers(s); e != nil {
		return e
	}
	if sc := s.SecurityContext; sc != nil {
		if e := validateSysctls(sc.Sysctls, s); e != nil {
			return e
		}
	}
	return validateHandlers(s)
}

// validateSysctls mirrors validateSysctls and ValidateHostSysctl.
func validateSysctls(sysctls []corev1.Sysctl, s *corev1.PodSpec) *fieldErr {
	seen := map[string]bool{}
	for i, sc := range sysctls {
		f := fmt.Sprintf("spec.securityContext.sysctls[%d].name", i)
		switch {
		case sc.Name == "":
			return fe(f, `required value; expected a sysctl name such as "net.ipv4.ip_local_port_range"`)
		case len(sc.Name) > sysctlMaxLength || !sysctlRE().MatchString(sc.Name):
			return fe(f, "invalid value %q: must have at most %d characters and match regex %s; expected a sysctl name such as \"net.ipv4.ip_local_port_range\" or \"net/ipv4/ip_local_port_range\"", shorten(sc.Name, 80), sysctlMaxLength, sysctlRE())
		case seen[sc.Name]:
			return fe(f, "duplicate value %q; expected each sysctl once", sc.Name)
		}
		seen[sc.Name] = true
		ns, _, _ := utilsysctl.GetNamespace(sc.Name)
		switch {
		case s.HostNetwork && ns == utilsysctl.NetNamespace:
			return fe(f, "invalid value %q: may not be specified when 'hostNetwork' is true; expected no network sysctls on a pod in the node's network namespace", sc.Name)
		case s.HostIPC && ns == utilsysctl.IPCNamespace:
			return fe(f, "invalid value %q: may not be specified when 'hostIPC' is true; expected no IPC sysctls on a pod in the node's IPC namespace", sc.Name)
		}
	}
	return nil
}
