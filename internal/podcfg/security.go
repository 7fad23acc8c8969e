package podcfg

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Default /proc masks of pkg/securitycontext (defaultMaskedPaths /
// defaultReadonlyPaths), as in the trace; defaultMaskedPaths adds the
// machine's thermal_throttle dirs (Options.ThermalThrottlePaths).
var (
	defaultStaticMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// defaultMaskedPaths mirrors pkg/securitycontext defaultMaskedPaths (v1.37):
// the static list, then the machine's cpuN/thermal_throttle dirs.
func defaultMaskedPaths(thermalThrottle []string) []string {
	return append(append([]string(nil), defaultStaticMaskedPaths...), thermalThrottle...)
}

// effectiveSecurityContext mirrors pkg/securitycontext
// DetermineEffectiveSecurityContext: the pod's SELinux options, runAsUser,
// runAsGroup, runAsNonRoot, overridden by the container's fields.
func effectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	eff := &corev1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.SELinuxOptions = psc.SELinuxOptions
		eff.WindowsOptions = psc.WindowsOptions
		eff.RunAsUser = psc.RunAsUser
		eff.RunAsGroup = psc.RunAsGroup
		eff.RunAsNonRoot = psc.RunAsNonRoot
	}
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	if csc.SELinuxOptions != nil {
		eff.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.WindowsOptions != nil {
		eff.WindowsOptions = csc.WindowsOptions
	}
	if csc.Capabilities != nil {
		eff.Capabilities = csc.Capabilities
	}
	if csc.Privileged != nil {
		eff.Privileged = csc.Privileged
	}
	if csc.RunAsUser != nil {
		eff.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		eff.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		eff.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.ReadOnlyRootFilesystem != nil {
		eff.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		eff.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	}
	if csc.ProcMount != nil {
		eff.ProcMount = csc.ProcMount
	}
	return eff
}

// imageUser splits ContainerInput.ImageUser into the uid / username the
// kubelet's getImageUser returns; no user means root (uid 0).
func imageUser(u string) (*int64, string) {
	if u == "" {
		return new(int64), ""
	}
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &n, ""
	}
	return nil, u
}

// verifyRunAsNonRoot mirrors kuberuntime/security_context_others.go verifyRunAsNonRoot.
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, uid *int64, username string) error {
	eff := effectiveSecurityContext(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return configErrorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", formatPod(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid != nil && *uid == 0:
		return configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", formatPod(pod), c.Name)
	case uid != nil && (*uid < 0 || *uid > math.MaxInt32):
		// validation.IsValidUserID: a uid is 0 to MaxInt32 (an image's
		// USER 4294967296 or -1 parses as a number, so it is no username).
		return configErrorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*uid, math.MaxInt32, math.MaxInt32, formatPod(pod), c.Name)
	case uid == nil && username != "":
		return configErrorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, formatPod(pod), c.Name)
	}
	return nil
}

// RunAsNonRootNeedsImageUser says whether verifyRunAsNonRoot decides the
// container by its image's user: runAsNonRoot is true and no runAsUser
// (the pod's or the container's) decides alone.
func RunAsNonRootNeedsImageUser(pod *corev1.Pod, c *corev1.Container) bool {
	eff := effectiveSecurityContext(pod, c)
	return eff.RunAsNonRoot != nil && *eff.RunAsNonRoot && eff.RunAsUser == nil
}

// containerSecurityContext mirrors kuberuntime/security_context.go
// determineEffectiveSecurityContext.
func containerSecurityContext(pod *corev1.Pod, c *corev1.Container, uid *int64, username string, ns *runtimeapi.NamespaceOption, rootDir string, thermalThrottle []string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		SelinuxOptions: seLinuxOption(eff.SELinuxOptions),
	}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{
			AddCapabilities:  make([]string, len(caps.Add)),
			DropCapabilities: make([]string, len(caps.Drop)),
		}
		for i, v := range caps.Add {
			sc.Capabilities.AddCapabilities[i] = string(v)
		}
		for i, v := range caps.Drop {
			sc.Capabilities.DropCapabilities[i] = string(v)
		}
	}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	var err error
	if sc.Seccomp, err = seccompProfile(pod, c, rootDir); err != nil {
		return nil, err
	}
	// The kubelet still fills the deprecated field too, for runtimes that read only it.
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil { //nolint:staticcheck // SA1019, as above
		return nil, err
	}
	if sc.RunAsUser == nil {
		if uid != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *uid}
		}
		sc.RunAsUsername = username
	}
	sc.NamespaceOptions = ns
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.SupplementalGroupsPolicy != nil {
			if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(*psc.SupplementalGroupsPolicy); err != nil {
				return nil, err
			}
		}
	}
	// AddNoNewPrivileges: only an explicit allowPrivilegeEscalation: false.
	sc.NoNewPrivs = eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation
	// The kubelet sends the default masks even for privileged containers (the
	// runtime drops them); only procMount: Unmasked clears them.
	if eff.ProcMount != nil && *eff.ProcMount == corev1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	} else {
		sc.MaskedPaths = defaultMaskedPaths(thermalThrottle)
		sc.ReadonlyPaths = append([]string(nil), defaultReadonlyPaths...)
	}
	return sc, nil
}

// seccompProfile mirrors kuberuntime/helpers.go getSeccompProfile with
// seccompDefault off: container field, then pod field, else Unconfined.
func seccompProfile(pod *corev1.Pod, c *corev1.Container, rootDir string) (*runtimeapi.SecurityProfile, error) {
	var p *corev1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("localhostProfile must be set if seccompProfile type is Localhost.") //nolint:staticcheck // ST1005: the kubelet's text (kuberuntime/helpers.go), verbatim
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(rootDir, "seccomp", *p.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile mirrors kuberuntime/helpers.go getAppArmorProfile: the
// container field, the pod field, or the deprecated
// container.apparmor.security.beta.kubernetes.io/<name> annotation.
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	var p *corev1.AppArmorProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil:
		p = pod.Spec.SecurityContext.AppArmorProfile
	default:
		switch v := pod.Annotations["container.apparmor.security.beta.kubernetes.io/"+c.Name]; {
		case v == "runtime/default":
			p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		case v == "unconfined":
			p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		case len(v) > len("localhost/") && v[:len("localhost/")] == "localhost/":
			name := v[len("localhost/"):]
			p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "runtime/default", nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "unconfined", nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", fmt.Errorf("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			"localhost/" + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}
