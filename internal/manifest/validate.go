package manifest

import (
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// fieldErr is a validation failure: the field path and the message.
type fieldErr struct {
	field, msg string
}

func fe(field, format string, args ...any) *fieldErr {
	return &fieldErr{field: field, msg: fmt.Sprintf(format, shortArgs(args)...)}
}

// Messages saying what a valid value looks like.
const (
	expectSubdomain  = `expected a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters, such as "web-1"`
	expectLabel      = `expected a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters, such as "app"`
	expectLabelKey   = `expected an optional DNS subdomain prefix and '/' followed by a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, such as "app" or "example.com/tier"`
	expectLabelValue = `expected at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or an empty value`
	expectEnvName    = `expected letters, digits, '_', '-' and '.', not starting with a digit, such as "MY_VAR"`
	expectKey        = `expected letters, digits, '-', '_' and '.', such as "config.yaml"`
	expectPort       = "expected a port number between 1 and 65535"
)

func quoteAll[S ~string](vals ...S) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", string(v))
	}
	switch len(q) {
	case 1:
		return q[0]
	case 2:
		return q[0] + " or " + q[1]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// oneOf checks that v is one of the allowed values.
func oneOf[S ~string](field string, v S, allowed ...S) *fieldErr {
	if slices.Contains(allowed, v) {
		return nil
	}
	return fe(field, "unsupported value %q; expected %s", string(v), quoteAll(allowed...))
}

func validateMeta(m *metav1.ObjectMeta, namespaced bool, example string) *fieldErr {
	if errs := validateMetaAll(m, namespaced, example); len(errs) > 0 {
		return &errs[0]
	}
	return nil
}

// validateMetaAll returns every field error of m: its name, namespace,
// labels and annotations.
func validateMetaAll(m *metav1.ObjectMeta, namespaced bool, example string) []fieldErr {
	var errs fieldErrs
	switch {
	case m.Name == "":
		errs.add(fe("metadata.name", "required value; expected a name such as %q", example))
	case len(validation.IsDNS1123Subdomain(m.Name)) > 0:
		errs.add(fe("metadata.name", "invalid value %q; %s", m.Name, expectSubdomain))
	}
	if namespaced {
		if len(validation.IsDNS1123Label(m.Namespace)) > 0 {
			errs.add(fe("metadata.namespace", "invalid value %q; %s", m.Namespace, expectLabel))
		}
	} else if m.Namespace != "" {
		errs.add(fe("metadata.namespace", "not allowed: this kind is not namespaced; expected no namespace"))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		if len(content.IsLabelKey(k)) > 0 {
			errs.add(fe("metadata.labels", "invalid key %q; %s", k, expectLabelKey))
		} else if v := m.Labels[k]; len(content.IsLabelValue(v)) > 0 {
			errs.add(fe("metadata.labels["+k+"]", "invalid value %q; %s", v, expectLabelValue))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Annotations)) {
		if len(content.IsLabelKey(k)) > 0 {
			errs.add(fe("metadata.annotations", "invalid key %q; %s", k, expectLabelKey))
		}
	}
	return errs
}

// fieldErrs collects an object's field errors (validatePod): each check
// adds its first error, and the checks go on.
type fieldErrs []fieldErr

// add adds e, when there is one.
func (l *fieldErrs) add(e *fieldErr) {
	if e != nil {
		*l = append(*l, *e)
	}
}

// validatePod returns every field error of pod, as the API server's
// ValidatePodCreate returns a field.ErrorList: each part of the pod (its
// metadata, each volume, each container and each of its lists, the rest
// of the spec) is checked, whatever the others hold.
func validatePod(pod *corev1.Pod) []fieldErr {
	var errs fieldErrs
	errs = append(errs, validateMetaAll(&pod.ObjectMeta, true, "web")...)
	errs.add(validateUID(pod.UID))
	s := &pod.Spec
	if len(s.Containers) == 0 {
		errs.add(fe("spec.containers", "required value; expected at least one container"))
	}
	errs.add(oneOf("spec.restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))
	errs.add(oneOf("spec.dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone))
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs.add(fe("spec.terminationGracePeriodSeconds", "invalid value %d; expected 0 or more seconds", *g))
	}
	if a := s.ActiveDeadlineSeconds; a != nil && *a <= 0 {
		errs.add(fe("spec.activeDeadlineSeconds", "invalid value %d; expected a number of seconds greater than 0", *a))
	}
	if sc := s.SecurityContext; sc != nil {
		errs.add(validateIDs("spec.securityContext", sc.RunAsUser, sc.RunAsGroup))
	}
	partErrs := len(errs)
	volumes := map[string]int{}
	for i := range s.Volumes {
		errs.add(validateVolume(&s.Volumes[i], fmt.Sprintf("spec.volumes[%d]", i), volumes))
		if _, dup := volumes[s.Volumes[i].Name]; !dup {
			volumes[s.Volumes[i].Name] = i
		}
	}
	names := map[string]string{}
	for i := range s.InitContainers {
		errs = append(errs, validateContainer(&s.InitContainers[i], fmt.Sprintf("spec.initContainers[%d]", i), true, s.HostNetwork, volumes, names)...)
	}
	for i := range s.Containers {
		errs = append(errs, validateContainer(&s.Containers[i], fmt.Sprintf("spec.containers[%d]", i), false, s.HostNetwork, volumes, names)...)
	}
	if len(errs) > partErrs {
		// The checks below read the spec as a whole (host ports, probes
		// and hooks against the containers' ports): on a spec whose parts
		// are wrong they would add errors of the same cause.
		return errs
	}
	errs.add(validateHostPorts(s))
	errs.add(validatePodSpecExtras(s))
	return errs
}

func validateIDs(field string, user, group *int64) *fieldErr {
	if user != nil && len(validation.IsValidUserID(*user)) > 0 {
		return fe(field+".runAsUser", "invalid value %d; expected a user ID between 0 and 2147483647", *user)
	}
	if group != nil && len(validation.IsValidGroupID(*group)) > 0 {
		return fe(field+".runAsGroup", "invalid value %d; expected a group ID between 0 and 2147483647", *group)
	}
	return nil
}

func validateVolume(v *corev1.Volume, f string, seen map[string]int) *fieldErr {
	switch {
	case v.Name == "":
		return fe(f+".name", `required value; expected a volume name such as "data"`)
	case len(validation.IsDNS1123Label(v.Name)) > 0:
		return fe(f+".name", "invalid value %q; %s", v.Name, expectLabel)
	}
	if j, ok := seen[v.Name]; ok {
		return fe(f+".name", "duplicate name %q (also spec.volumes[%d]); expected unique volume names", v.Name, j)
	}
	if n := countSources(&v.VolumeSource); n > 1 {
		return fe(f, "%d volume sources set; expected exactly one, such as emptyDir, configMap, secret or hostPath", n)
	}
	switch {
	case v.HostPath != nil:
		if !path.IsAbs(v.HostPath.Path) {
			return fe(f+".hostPath.path", "invalid value %q; expected an absolute path on the node, such as \"/var/log\"", v.HostPath.Path)
		}
	case v.ConfigMap != nil:
		if v.ConfigMap.Name == "" {
			return fe(f+".configMap.name", "required value; expected the name of a ConfigMap")
		}
	case v.Secret != nil:
		if v.Secret.SecretName == "" {
			return fe(f+".secret.secretName", "required value; expected the name of a Secret")
		}
	}
	return validateVolumeDetails(v, f)
}

// validateContainer validates container c at path f. volumes maps volume
// names to their index; names maps the container names seen so far to their
// paths.
func validateContainer(c *corev1.Container, f string, isInit, hostNetwork bool, volumes map[string]int, names map[string]string) []fieldErr {
	var errs fieldErrs
	switch {
	case c.Name == "":
		errs.add(fe(f+".name", `required value; expected a container name such as "app"`))
	case len(validation.IsDNS1123Label(c.Name)) > 0:
		errs.add(fe(f+".name", "invalid value %q; %s", c.Name, expectLabel))
	default:
		if other, ok := names[c.Name]; ok {
			errs.add(fe(f+".name", "duplicate name %q (also %s); expected container names to be unique across initContainers and containers", c.Name, other))
		} else {
			names[c.Name] = f
		}
	}
	switch {
	case c.Image == "":
		errs.add(fe(f+".image", `required value; expected a container image reference such as "busybox:1.35"`))
	case strings.TrimSpace(c.Image) != c.Image:
		errs.add(fe(f+".image", "invalid value %q: leading or trailing whitespace; expected a container image reference such as \"busybox:1.35\"", c.Image))
	}
	errs.add(oneOf(f+".imagePullPolicy", c.ImagePullPolicy, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever))
	errs.add(oneOf(f+".terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError))
	// restartPolicy and restartPolicyRules (KEP-5307): validateRestartRules.
	if isInit && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
		for _, x := range []struct {
			name string
			set  bool
		}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
			if x.set {
				errs.add(fe(f+"."+x.name, "not allowed on an init container; expected no value, or restartPolicy: Always to make it a sidecar container"))
			}
		}
	}
	errs.add(validatePorts(c, f, hostNetwork))
	errs.add(validateEnv(c, f))
	errs.add(validateMounts(c, f, volumes))
	errs = append(errs, validateResourcesAll(&c.Resources, f+".resources")...)
	if sc := c.SecurityContext; sc != nil {
		errs.add(validateIDs(f+".securityContext", sc.RunAsUser, sc.RunAsGroup))
	}
	return errs
}

func validatePorts(c *corev1.Container, f string, hostNetwork bool) *fieldErr {
	portNames := map[string]bool{}
	for j, p := range c.Ports {
		pf := fmt.Sprintf("%s.ports[%d]", f, j)
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			return fe(pf+".containerPort", "invalid value %d; %s", p.ContainerPort, expectPort)
		}
		if p.HostPort < 0 || p.HostPort > 65535 {
			return fe(pf+".hostPort", "invalid value %d; expected 0 (no host port) or a port number between 1 and 65535", p.HostPort)
		}
		if hostNetwork && p.HostPort != p.ContainerPort {
			return fe(pf+".hostPort", "invalid value %d with hostNetwork: true; expected the containerPort %d (or no hostPort)", p.HostPort, p.ContainerPort)
		}
		if e := oneOf(pf+".protocol", p.Protocol, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP); e != nil {
			return e
		}
		if p.Name != "" {
			if len(validation.IsValidPortName(p.Name)) > 0 {
				return fe(pf+".name", "invalid value %q; expected at most 15 lowercase letters, digits and '-', with at least one letter, such as \"http\"", p.Name)
			}
			if portNames[p.Name] {
				return fe(pf+".name", "duplicate port name %q; expected unique port names within a container", p.Name)
			}
			portNames[p.Name] = true
		}
	}
	return nil
}

// hostPortKey identifies a host port in use, to find conflicts.
type hostPortKey struct {
	ip    string
	port  int32
	proto corev1.Protocol
}

func validateHostPorts(s *corev1.PodSpec) *fieldErr {
	used := map[hostPortKey]string{}
	check := func(cs []corev1.Container, list string) *fieldErr {
		for i, c := range cs {
			for j, p := range c.Ports {
				if p.HostPort == 0 {
					continue
				}
				f := fmt.Sprintf("spec.%s[%d].ports[%d].hostPort", list, i, j)
				k := hostPortKey{p.HostIP, p.HostPort, p.Protocol}
				if other, ok := used[k]; ok {
					return fe(f, "duplicate host port %d/%s (also %s); expected each host port to be used once", p.HostPort, p.Protocol, other)
				}
				used[k] = f
			}
		}
		return nil
	}
	if e := check(s.InitContainers, "initContainers"); e != nil {
		return e
	}
	return check(s.Containers, "containers")
}

// envFieldPaths are the fieldRef paths the kubelet resolves for environment
// variables, besides metadata.labels['KEY'] and metadata.annotations['KEY'].
var envFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// resourceFieldNames are the resourceFieldRef resources the kubelet resolves.
var resourceFieldNames = []string{
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
}

func countPointers(v any) int {
	n := 0
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func validateEnv(c *corev1.Container, f string) *fieldErr {
	for j := range c.Env {
		ev := &c.Env[j]
		ef := fmt.Sprintf("%s.env[%d]", f, j)
		switch {
		case ev.Name == "":
			return fe(ef+".name", "required value; %s", expectEnvName)
		case len(validation.IsEnvVarName(ev.Name)) > 0:
			return fe(ef+".name", "invalid name %q; %s", ev.Name, expectEnvName)
		}
		vf := ev.ValueFrom
		if vf == nil {
			continue
		}
		if ev.Value != "" {
			return fe(ef+".valueFrom", "may not be set together with value; expected either value or valueFrom")
		}
		if n := countPointers(vf); n != 1 {
			return fe(ef+".valueFrom", "%d sources set; expected exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef", n)
		}
		switch {
		case vf.FieldRef != nil:
			fp := vf.FieldRef.FieldPath
			if vf.FieldRef.APIVersion != "v1" {
				return fe(ef+".valueFrom.fieldRef.apiVersion", "unsupported value %q; expected \"v1\"", vf.FieldRef.APIVersion)
			}
			if !slices.Contains(envFieldPaths, fp) && !subscripted(fp, "metadata.labels") && !subscripted(fp, "metadata.annotations") {
				return fe(ef+".valueFrom.fieldRef.fieldPath", "unsupported value %q; expected %s, metadata.labels['KEY'] or metadata.annotations['KEY']", fp, quoteAll(envFieldPaths...))
			}
		case vf.ResourceFieldRef != nil:
			r := vf.ResourceFieldRef.Resource
			if !slices.Contains(resourceFieldNames, r) && !strings.HasPrefix(r, "limits.hugepages-") && !strings.HasPrefix(r, "requests.hugepages-") {
				return fe(ef+".valueFrom.resourceFieldRef.resource", "unsupported value %q; expected %s", r, quoteAll(resourceFieldNames...))
			}
		case vf.ConfigMapKeyRef != nil:
			if vf.ConfigMapKeyRef.Name == "" {
				return fe(ef+".valueFrom.configMapKeyRef.name", "required value; expected the name of a ConfigMap")
			}
			if vf.ConfigMapKeyRef.Key == "" {
				return fe(ef+".valueFrom.configMapKeyRef.key", "required value; expected a key of the ConfigMap")
			}
		case vf.SecretKeyRef != nil:
			if vf.SecretKeyRef.Name == "" {
				return fe(ef+".valueFrom.secretKeyRef.name", "required value; expected the name of a Secret")
			}
			if vf.SecretKeyRef.Key == "" {
				return fe(ef+".valueFrom.secretKeyRef.key", "required value; expected a key of the Secret")
			}
		}
	}
	for j, src := range c.EnvFrom {
		ef := fmt.Sprintf("%s.envFrom[%d]", f, j)
		switch {
		case src.ConfigMapRef != nil && src.SecretRef != nil, src.ConfigMapRef == nil && src.SecretRef == nil:
			return fe(ef, "expected exactly one of configMapRef or secretRef")
		case src.ConfigMapRef != nil && src.ConfigMapRef.Name == "":
			return fe(ef+".configMapRef.name", "required value; expected the name of a ConfigMap")
		case src.SecretRef != nil && src.SecretRef.Name == "":
			return fe(ef+".secretRef.name", "required value; expected the name of a Secret")
		}
	}
	return nil
}

// subscripted reports whether fp is base['KEY'].
func subscripted(fp, base string) bool {
	rest, ok := strings.CutPrefix(fp, base+"['")
	return ok && strings.HasSuffix(rest, "']") && len(rest) > 2
}

func validateMounts(c *corev1.Container, f string, volumes map[string]int) *fieldErr {
	paths := map[string]int{}
	for j, m := range c.VolumeMounts {
		mf := fmt.Sprintf("%s.volumeMounts[%d]", f, j)
		if m.Name == "" {
			return fe(mf+".name", "required value; expected the name of a volume in spec.volumes")
		}
		if _, ok := volumes[m.Name]; !ok {
			return fe(mf+".name", "volume %q not found; expected the name of a volume in spec.volumes (%s)", m.Name, volumeList(volumes))
		}
		switch {
		case m.MountPath == "":
			return fe(mf+".mountPath", `required value; expected an absolute path such as "/data"`)
		case !path.IsAbs(m.MountPath):
			return fe(mf+".mountPath", "invalid value %q: not an absolute path; expected a path starting with \"/\", such as \"/data\"", m.MountPath)
		}
		if k, ok := paths[m.MountPath]; ok {
			return fe(mf+".mountPath", "duplicate mount path %q (also volumeMounts[%d]); expected each path to be mounted once", m.MountPath, k)
		}
		paths[m.MountPath] = j
		if e := validateMountPaths(&c.VolumeMounts[j], mf); e != nil {
			return e
		}
	}
	return nil
}

func volumeList(volumes map[string]int) string {
	if len(volumes) == 0 {
		return "the pod has no volumes"
	}
	names := slices.Sorted(maps.Keys(volumes))
	return "have " + quoteAll(names...)
}

func validateResources(r *corev1.ResourceRequirements, f string) *fieldErr {
	if errs := validateResourcesAll(r, f); len(errs) > 0 {
		return &errs[0]
	}
	return nil
}

// validateResourcesAll returns every field error of r (at path f): each
// resource name and quantity, and each request above its limit.
func validateResourcesAll(r *corev1.ResourceRequirements, f string) []fieldErr {
	var errs fieldErrs
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, k := range slices.Sorted(maps.Keys(list.rl)) {
			if lim, ok := r.Limits[k]; ok && list.name == "requests" && lim.Cmp(list.rl[k]) == 0 && slices.ContainsFunc(errs, func(e fieldErr) bool { return e.field == fmt.Sprintf("%s.limits[%s]", f, k) }) {
				continue // the request defaulted from the limit: one error says it
			}
			if msg := containerResourceName(string(k)); msg != "" {
				errs.add(fe(fmt.Sprintf("%s.%s[%s]", f, list.name, k), "%s", msg))
			} else if q := list.rl[k]; q.Sign() < 0 {
				errs.add(fe(fmt.Sprintf("%s.%s[%s]", f, list.name, k), "invalid value %s; expected a quantity of 0 or more", q.String()))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for _, k := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[k]
		lim, ok := r.Limits[k]
		if ok && req.Cmp(lim) > 0 {
			errs.add(fe(fmt.Sprintf("%s.requests[%s]", f, k), "request %s is greater than the limit %s; expected requests less than or equal to limits", req.String(), lim.String()))
		}
	}
	return errs
}

// containerResourceName mirrors the API server's
// validateContainerResourceName (pkg/apis/core/validation/validation.go):
// a name without a domain must be a standard container resource (cpu,
// memory, ephemeral-storage, hugepages-<size>); one with a domain other
// than kubernetes.io must be a valid extended resource name
// (IsExtendedResourceName). It returns the problem, or "".
func containerResourceName(name string) string {
	const expected = `expected "cpu", "memory", "ephemeral-storage", "hugepages-<size>" or an extended resource with a domain, such as "example.com/gpu"`
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Sprintf("invalid resource name %q: %s; %s", name, errs[0], expected)
	}
	domain, _, hasDomain := strings.Cut(name, "/")
	switch {
	case !hasDomain:
		if name == "cpu" || name == "memory" || name == "ephemeral-storage" || strings.HasPrefix(name, "hugepages-") {
			return ""
		}
		return fmt.Sprintf("unsupported resource name %q: it is not a standard resource for containers; %s", name, expected)
	case domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io"):
		return "" // native: the API server checks no further here
	case strings.HasPrefix(name, "requests."), len(validation.IsQualifiedName("requests."+name)) > 0:
		return fmt.Sprintf("invalid extended resource name %q; %s", name, expected)
	}
	return ""
}

func validateSecret(s *corev1.Secret) *fieldErr {
	if e := validateMeta(&s.ObjectMeta, true, "my-secret"); e != nil {
		return e
	}
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		if len(validation.IsConfigMapKey(k)) > 0 {
			return fe("data", "invalid key %q; %s", k, expectKey)
		}
	}
	return nil
}

func validateConfigMap(c *corev1.ConfigMap) *fieldErr {
	if e := validateMeta(&c.ObjectMeta, true, "my-config"); e != nil {
		return e
	}
	for _, k := range slices.Sorted(maps.Keys(c.Data)) {
		if len(validation.IsConfigMapKey(k)) > 0 {
			return fe("data", "invalid key %q; %s", k, expectKey)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.BinaryData)) {
		if len(validation.IsConfigMapKey(k)) > 0 {
			return fe("binaryData", "invalid key %q; %s", k, expectKey)
		}
		if _, dup := c.Data[k]; dup {
			return fe("binaryData", "duplicate key %q (also in data); expected each key in only one of data and binaryData", k)
		}
	}
	return nil
}

func validateNode(n *corev1.Node) *fieldErr {
	return validateMeta(&n.ObjectMeta, false, "node-1")
}
