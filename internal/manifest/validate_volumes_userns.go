package manifest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The API server's rules for two pod features of kubelet v1.33+ (from
// pkg/apis/core/validation/validation.go), with its wording.

// validateImageVolume mirrors validateImageVolumeSource: a reference is
// required and the pull policy (defaulted by SetDefaults_Volume) is one of
// the three. Like a container's image, a reference with surrounding white
// space is refused.
func validateImageVolume(s *corev1.ImageVolumeSource, f string) *fieldErr {
	const expect = `expected an OCI image or artifact reference such as "docker.io/library/busybox:1.35"`
	switch {
	case s.Reference == "":
		return fe(f+".reference", "required value; %s", expect)
	case strings.TrimSpace(s.Reference) != s.Reference:
		return fe(f+".reference", "invalid value %q: leading or trailing whitespace; %s", s.Reference, expect)
	}
	return oneOf(f+".pullPolicy", s.PullPolicy, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
}

// validateHostUsers mirrors validateHostUsers: a pod in its own user
// namespace (hostUsers: false) may not share the node's network, PID or IPC
// namespace (UserNamespacesHostNetworkSupport, alpha in v1.35, is off by
// default).
func validateHostUsers(s *corev1.PodSpec) *fieldErr {
	if s.HostUsers == nil || *s.HostUsers {
		return nil
	}
	for _, h := range []struct {
		field string
		on    bool
	}{{"spec.hostNetwork", s.HostNetwork}, {"spec.hostPID", s.HostPID}, {"spec.hostIPC", s.HostIPC}} {
		if h.on {
			return fe(h.field, "forbidden when `hostUsers` is false; expected a pod in its own user namespace to use its own %s namespace (set %s: false, or hostUsers: true)",
				map[string]string{"spec.hostNetwork": "network", "spec.hostPID": "PID", "spec.hostIPC": "IPC"}[h.field], strings.TrimPrefix(h.field, "spec."))
		}
	}
	return nil
}
