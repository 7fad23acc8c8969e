package volume

import (
	"errors"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/fieldpath"
)

// fileProjection is one file the atomic writer writes (volumeutil.FileProjection).
type fileProjection struct {
	data []byte
	mode int32
}

// defaultMode is the API server's default for defaultMode (0644), used when
// a volume reaches here undefaulted.
const defaultMode int32 = 0o644

func modeOr(m *int32) int32 {
	if m == nil {
		return defaultMode
	}
	return *m
}

func isTrue(b *bool) bool { return b != nil && *b }

// configMapPayload mirrors configmap.go SetUpAt + MakePayload: a missing
// ConfigMap is an empty one when optional; without items every key of data
// and binaryData is a file; an item whose key is missing is skipped when
// optional, an error otherwise.
func (h *Host) configMapPayload(ns, name string, items []corev1.KeyToPath, mode *int32, optional *bool) (map[string]fileProjection, error) {
	var cm *corev1.ConfigMap
	if h.Source != nil {
		cm, _ = h.Source.ConfigMap(ns, name)
	}
	if cm == nil {
		if !isTrue(optional) {
			return nil, &NotFoundError{Resource: "configmap", Name: name}
		}
		cm = &corev1.ConfigMap{}
	}
	dm := modeOr(mode)
	payload := map[string]fileProjection{}
	if len(items) == 0 {
		for k, v := range cm.Data {
			payload[k] = fileProjection{data: []byte(v), mode: dm}
		}
		for k, v := range cm.BinaryData {
			payload[k] = fileProjection{data: v, mode: dm}
		}
		return payload, nil
	}
	for _, it := range items {
		var data []byte
		if v, ok := cm.Data[it.Key]; ok {
			data = []byte(v)
		} else if v, ok := cm.BinaryData[it.Key]; ok {
			data = v
		} else {
			if isTrue(optional) {
				continue
			}
			return nil, &MissingKeyError{Resource: "configmap", Key: it.Key}
		}
		m := dm
		if it.Mode != nil {
			m = *it.Mode
		}
		payload[it.Path] = fileProjection{data: data, mode: m}
	}
	return payload, nil
}

// secretPayload mirrors secret.go SetUpAt + MakePayload (data only:
// stringData is merged into data when the Secret is stored).
func (h *Host) secretPayload(ns, name string, items []corev1.KeyToPath, mode *int32, optional *bool) (map[string]fileProjection, error) {
	var s *corev1.Secret
	if h.Source != nil {
		s, _ = h.Source.Secret(ns, name)
	}
	if s == nil {
		if !isTrue(optional) {
			return nil, &NotFoundError{Resource: "secret", Name: name}
		}
		s = &corev1.Secret{}
	}
	data := s.Data
	if len(s.StringData) > 0 {
		data = map[string][]byte{}
		for k, v := range s.Data {
			data[k] = v
		}
		for k, v := range s.StringData {
			data[k] = []byte(v)
		}
	}
	dm := modeOr(mode)
	payload := map[string]fileProjection{}
	if len(items) == 0 {
		for k, v := range data {
			payload[k] = fileProjection{data: v, mode: dm}
		}
		return payload, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if isTrue(optional) {
				continue
			}
			return nil, &MissingKeyError{Resource: "secret", Key: it.Key}
		}
		m := dm
		if it.Mode != nil {
			m = *it.Mode
		}
		payload[it.Path] = fileProjection{data: v, mode: m}
	}
	return payload, nil
}

// downwardAPIPayload mirrors downwardapi.go CollectData: each item's path
// (cleaned) gets the field's value (fieldpath.ExtractFieldPathAsString) or
// the container's resource value, a missing limit taken from the node's
// allocatable (fieldpath.ExtractResourceValueByContainerNameAndNodeAllocatable);
// errors are collected and aggregated.
func (h *Host) downwardAPIPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode *int32) (map[string]fileProjection, error) {
	dm := modeOr(mode)
	payload := map[string]fileProjection{}
	var errs []error
	for _, it := range items {
		fp := fileProjection{mode: dm}
		if it.Mode != nil {
			fp.mode = *it.Mode
		}
		switch {
		case it.FieldRef != nil:
			v, err := fieldpath.ExtractFieldPathAsString(pod, it.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, err)
			} else {
				fp.data = []byte(v)
			}
		case it.ResourceFieldRef != nil:
			v, err := fieldpath.ExtractResourceValueByContainerNameAndNodeAllocatable(it.ResourceFieldRef, pod, it.ResourceFieldRef.ContainerName, h.NodeAllocatable)
			if err != nil {
				errs = append(errs, err)
			} else {
				fp.data = []byte(v)
			}
		}
		payload[filepath.Clean(it.Path)] = fp
	}
	return payload, aggregate(errs)
}

// projectedPayload mirrors projected.go collectData: the sources' payloads
// in order (a later source's path wins), each with the projected
// defaultMode; errors are collected and aggregated.
func (h *Host) projectedPayload(pod *corev1.Pod, src *corev1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	// Sources podstep cannot provide fail the volume on their own, before
	// anything else, so the message says exactly that.
	for _, s := range src.Sources {
		switch {
		case s.ServiceAccountToken != nil && h.Tokens == nil && !h.Placeholders:
			return nil, errTokenProjection(pod.Spec.ServiceAccountName)
		case s.ClusterTrustBundle != nil:
			return nil, errUnsupportedProjection("clusterTrustBundle")
		case s.PodCertificate != nil:
			return nil, errUnsupportedProjection("podCertificate")
		}
	}
	payload := map[string]fileProjection{}
	var errs []error
	add := func(p map[string]fileProjection, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, v := range p {
			payload[k] = v
		}
	}
	for _, s := range src.Sources {
		switch {
		case s.ConfigMap != nil && s.ConfigMap.Name == RootCAConfigMap && h.Placeholders && !h.hasConfigMap(pod.Namespace, s.ConfigMap.Name):
			add(placeholderRootCA(s.ConfigMap.Items, src.DefaultMode), nil)
		case s.ConfigMap != nil:
			add(h.configMapPayload(pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, src.DefaultMode, s.ConfigMap.Optional))
		case s.Secret != nil:
			add(h.secretPayload(pod.Namespace, s.Secret.Name, s.Secret.Items, src.DefaultMode, s.Secret.Optional))
		case s.DownwardAPI != nil:
			add(h.downwardAPIPayload(pod, s.DownwardAPI.Items, src.DefaultMode))
		case s.ServiceAccountToken != nil && h.Tokens == nil:
			add(placeholderToken(pod, s.ServiceAccountToken, src.DefaultMode), nil)
		case s.ServiceAccountToken != nil:
			add(h.tokenPayload(pod, s.ServiceAccountToken, src.DefaultMode))
		}
	}
	return payload, aggregate(errs)
}

// aggregate mirrors utilerrors.NewAggregate's text: one error as is,
// several as "[a, b]".
func aggregate(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &aggregateError{errs}
}

type aggregateError struct{ errs []error }

func (a *aggregateError) Error() string {
	var s []string
	for _, e := range a.errs {
		s = append(s, e.Error())
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (a *aggregateError) Unwrap() []error { return a.errs }

// IsNotFound reports whether err is (or wraps) a missing ConfigMap or Secret.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// tokenPayload mirrors projected.go collectData's serviceAccountToken case:
// a TokenRequest for the pod's service account with the projection's
// audience (none: the API server's own) and expirationSeconds, bound to the
// pod by name and UID, its token written at the projection's path with the
// projected defaultMode, or 0600 when the volume gets an owner (the pod's
// fsGroup, or one run-as user for every container: volumeutil.FsUserFrom),
// which SetVolumeOwnership then widens to 0640.
func (h *Host) tokenPayload(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection, mode *int32) (map[string]fileProjection, error) {
	m := modeOr(mode)
	if sc := pod.Spec.SecurityContext; (sc != nil && sc.FSGroup != nil) || fsUserFrom(pod) != nil {
		m = 0o600
	}
	var auds []string
	if tp.Audience != "" {
		auds = []string{tp.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := h.Tokens.GetServiceAccountToken(pod.Namespace, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         auds,
			ExpirationSeconds: tp.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]fileProjection{tp.Path: {data: []byte(tr.Status.Token), mode: m}}, nil
}

// fsUserFrom mirrors volumeutil.FsUserFrom (pkg/volume/util/util.go): the
// one run-as user every container (init containers too) has, from its own
// securityContext or the pod's; nil when one has none or two differ.
func fsUserFrom(pod *corev1.Pod) *int64 {
	var user *int64
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			var u *int64
			if sc := list[i].SecurityContext; sc != nil && sc.RunAsUser != nil {
				u = sc.RunAsUser
			} else if psc := pod.Spec.SecurityContext; psc != nil && psc.RunAsUser != nil {
				u = psc.RunAsUser
			}
			if u == nil || (user != nil && *user != *u) {
				return nil
			}
			user = u
		}
	}
	return user
}
