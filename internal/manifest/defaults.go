package manifest

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNamespace is the namespace of objects that name none, as with
// kubectl apply without -n.
const DefaultNamespace = "default"

// Default values, as in pkg/apis/core/v1/defaults.go.
const (
	defaultTerminationGracePeriodSeconds int64 = 30
	defaultVolumeMode                    int32 = 0o644
	defaultTokenExpirationSeconds        int64 = 3600
	defaultSchedulerName                       = "default-scheduler"
)

func ptrTo[T any](v T) *T { return &v }

func setMetaDefaults(m *metav1.ObjectMeta) {
	if m.Namespace == "" {
		m.Namespace = DefaultNamespace
	}
}

// setPodDefaults applies the API server's defaults to pod, and gives it a UID
// derived from its document bytes when it has none.
func setPodDefaults(pod *corev1.Pod, raw []byte) {
	setMetaDefaults(&pod.ObjectMeta)
	if pod.UID == "" {
		pod.UID = PodUID(raw)
	}
	s := &pod.Spec
	// SetDefaults_PodSpec
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(defaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = defaultSchedulerName
	}
	// SetDefaults_Pod
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i], s.HostNetwork)
	}
	defaultPodLevelResources(s)
	for i := range s.Volumes {
		setVolumeDefaults(&s.Volumes[i])
	}
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for k, v := range r.Limits {
		if _, ok := r.Requests[k]; !ok {
			r.Requests[k] = v.DeepCopy()
		}
	}
}

func setContainerDefaults(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	defaultRequestsFromLimits(&c.Resources)
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	setProbeDefaults(c.LivenessProbe)
	setProbeDefaults(c.ReadinessProbe)
	setProbeDefaults(c.StartupProbe)
	if c.Lifecycle != nil {
		setHandlerDefaults(c.Lifecycle.PostStart)
		setHandlerDefaults(c.Lifecycle.PreStop)
	}
}

func setProbeDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setHTTPGetDefaults(p.HTTPGet)
}

func setHandlerDefaults(h *corev1.LifecycleHandler) {
	if h != nil {
		setHTTPGetDefaults(h.HTTPGet)
	}
}

func setHTTPGetDefaults(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// imageTag returns the tag of an image reference the way the API server's
// imagePullPolicy defaulting sees it: "latest" when the reference has
// neither a tag nor a digest, "" when it has only a digest.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i+1:], "/") {
		tag = name[i+1:]
	}
	if tag == "" && !hasDigest {
		return "latest"
	}
	return tag
}

func setVolumeDefaults(v *corev1.Volume) {
	if countSources(&v.VolumeSource) == 0 {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	// SetDefaults_Volume: an image volume's pull policy defaults as a
	// container's imagePullPolicy does (Always for :latest).
	if s := v.Image; s != nil && s.PullPolicy == "" {
		s.PullPolicy = corev1.PullIfNotPresent
		if imageTag(s.Reference) == "latest" {
			s.PullPolicy = corev1.PullAlways
		}
	}
	if s := v.ConfigMap; s != nil && s.DefaultMode == nil {
		s.DefaultMode = ptrTo(defaultVolumeMode)
	}
	if s := v.Secret; s != nil && s.DefaultMode == nil {
		s.DefaultMode = ptrTo(defaultVolumeMode)
	}
	if s := v.DownwardAPI; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(defaultVolumeMode)
		}
		for i := range s.Items {
			if f := s.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
	if s := v.Projected; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(defaultVolumeMode)
		}
		for i := range s.Sources {
			src := &s.Sources[i]
			if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptrTo(defaultTokenExpirationSeconds)
			}
			if d := src.DownwardAPI; d != nil {
				for j := range d.Items {
					if f := d.Items[j].FieldRef; f != nil && f.APIVersion == "" {
						f.APIVersion = "v1"
					}
				}
			}
		}
	}
	if s := v.HostPath; s != nil && s.Type == nil {
		s.Type = ptrTo(corev1.HostPathUnset)
	}
}

// countSources returns how many of the volume source fields are set.
func countSources(vs *corev1.VolumeSource) int {
	n := 0
	rv := reflect.ValueOf(vs).Elem()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func setSecretDefaults(s *corev1.Secret) {
	setMetaDefaults(&s.ObjectMeta)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

func setConfigMapDefaults(c *corev1.ConfigMap) {
	setMetaDefaults(&c.ObjectMeta)
}

func setNodeDefaults(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}
