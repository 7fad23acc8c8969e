package volume

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// RootCAConfigMap is the ConfigMap kube-controller-manager's
// root-ca-cert-publisher puts in every namespace (key ca.crt: the cluster's
// root CA bundle), which the kube-api-access projected volume projects.
const RootCAConfigMap = "kube-root-ca.crt"

// PlaceholderToken is the text podstep writes where a serviceAccountToken
// projection's token goes when it has no API server to mint one: labelled,
// and not a JWT (no dots), so that nothing takes it for a credential.
const PlaceholderToken = "podstep-placeholder-token: not a valid service-account token (no JWT, no dot in it); podstep had no API server to mint one; run with --kubeconfig to have the API server's TokenRequest API mint a real token, as the kubelet's token manager does\n"

// PlaceholderRootCA is the text podstep writes for ca.crt when the
// kube-root-ca.crt ConfigMap is not in the manifest and there is no API
// server: a labelled placeholder, not a PEM bundle.
const PlaceholderRootCA = "# podstep placeholder, not a certificate: the kube-root-ca.crt ConfigMap was not in the manifest and podstep had no API server.\n# On a real node the kubelet writes here the cluster's root CA bundle (PEM), key ca.crt of the ConfigMap kube-root-ca.crt\n# that kube-controller-manager publishes in every namespace. Add that ConfigMap to the manifest, or run with --kubeconfig.\n"

// Placeholder warnings, given once per volume step (the step dedups them).
const (
	WarnPlaceholderToken  = "no API server: the service-account token is a placeholder (not a valid JWT), written where the kubelet writes the token the API server's TokenRequest API mints; a container that calls the API server with it is refused. Run with --kubeconfig to mint a real token"
	WarnPlaceholderRootCA = "no kube-root-ca.crt ConfigMap in the manifest and no API server: ca.crt is a placeholder, not the cluster's root CA bundle a real node would write; add the ConfigMap kube-root-ca.crt (key ca.crt) to the manifest, or run with --kubeconfig"
)

// placeholderToken is the token projection's file, with the mode
// tokenPayload gives it, holding PlaceholderToken.
func placeholderToken(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection, mode *int32) map[string]fileProjection {
	m := modeOr(mode)
	if sc := pod.Spec.SecurityContext; (sc != nil && sc.FSGroup != nil) || fsUserFrom(pod) != nil {
		m = 0o600
	}
	return map[string]fileProjection{filepath.Clean(tp.Path): {data: []byte(PlaceholderToken), mode: m}}
}

// placeholderRootCA is the kube-root-ca.crt projection's files (its items,
// else ca.crt), each holding PlaceholderRootCA.
func placeholderRootCA(items []corev1.KeyToPath, mode *int32) map[string]fileProjection {
	out := map[string]fileProjection{}
	if len(items) == 0 {
		out["ca.crt"] = fileProjection{data: []byte(PlaceholderRootCA), mode: modeOr(mode)}
	}
	for _, it := range items {
		m := modeOr(mode)
		if it.Mode != nil {
			m = *it.Mode
		}
		out[filepath.Clean(it.Path)] = fileProjection{data: []byte(PlaceholderRootCA), mode: m}
	}
	return out
}

// hasConfigMap says whether the source has the ConfigMap.
func (h *Host) hasConfigMap(namespace, name string) bool {
	if h.Source == nil {
		return false
	}
	_, ok := h.Source.ConfigMap(namespace, name)
	return ok
}

// placeholderWarnings lists the warnings for the placeholders a projected
// volume gets (see Host.Placeholders).
func (h *Host) placeholderWarnings(pod *corev1.Pod, src *corev1.ProjectedVolumeSource) []string {
	if !h.Placeholders || src == nil {
		return nil
	}
	var out []string
	for _, s := range src.Sources {
		switch {
		case s.ServiceAccountToken != nil && h.Tokens == nil:
			out = append(out, WarnPlaceholderToken)
		case s.ConfigMap != nil && s.ConfigMap.Name == RootCAConfigMap && !h.hasConfigMap(pod.Namespace, s.ConfigMap.Name):
			out = append(out, WarnPlaceholderRootCA)
		}
	}
	return out
}
