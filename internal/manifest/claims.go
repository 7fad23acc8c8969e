package manifest

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kinds of the storage objects a bundle may carry: the claims a pod's
// persistentVolumeClaim and ephemeral volumes name, and the volumes bound
// to them, as the kubelet reads them from the API server.
const (
	KindPersistentVolumeClaim = "PersistentVolumeClaim"
	KindPersistentVolume      = "PersistentVolume"
)

// PersistentVolumeClaim returns the claim namespace/name of the bundle, if
// the file has it (or internal/cluster read it).
func (b *Bundle) PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	c, ok := b.Claims[namespace+"/"+name]
	return c, ok
}

// PersistentVolume returns the (cluster-scoped) PersistentVolume name of the
// bundle, if the file has it (or internal/cluster read it).
func (b *Bundle) PersistentVolume(name string) (*corev1.PersistentVolume, bool) {
	v, ok := b.Volumes[name]
	return v, ok
}

// claim decodes, defaults and validates a PersistentVolumeClaim document.
func (p *parser) claim(js []byte) error {
	c := &corev1.PersistentVolumeClaim{}
	if err := p.decode(js, c); err != nil {
		return err
	}
	setClaimDefaults(c)
	if e := validateClaim(c); e != nil {
		return p.errf(e.field, "%s", e.msg)
	}
	key := c.Namespace + "/" + c.Name
	if err := p.checkDuplicate(KindPersistentVolumeClaim, key); err != nil {
		return err
	}
	if p.bundle.Claims == nil {
		p.bundle.Claims = map[string]*corev1.PersistentVolumeClaim{}
	}
	p.bundle.Claims[key] = c
	return nil
}

// persistentVolume decodes, defaults and validates a PersistentVolume
// document.
func (p *parser) persistentVolume(js []byte) error {
	v := &corev1.PersistentVolume{}
	if err := p.decode(js, v); err != nil {
		return err
	}
	setPVDefaults(v)
	if e := validatePV(v); e != nil {
		return p.errf(e.field, "%s", e.msg)
	}
	if err := p.checkDuplicate(KindPersistentVolume, v.Name); err != nil {
		return err
	}
	if p.bundle.Volumes == nil {
		p.bundle.Volumes = map[string]*corev1.PersistentVolume{}
	}
	p.bundle.Volumes[v.Name] = v
	return nil
}

// setClaimDefaults mirrors SetDefaults_PersistentVolumeClaim and
// SetDefaults_PersistentVolumeClaimSpec (pkg/apis/core/v1/defaults.go):
// status.phase Pending, spec.volumeMode Filesystem. The status is kept as
// the file gives it: a claim copied with kubectl get -o yaml says Bound.
func setClaimDefaults(c *corev1.PersistentVolumeClaim) {
	setMetaDefaults(&c.ObjectMeta)
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
}

// setPVDefaults mirrors SetDefaults_PersistentVolume: status.phase Pending,
// persistentVolumeReclaimPolicy Retain, volumeMode Filesystem, and a
// hostPath's type "".
func setPVDefaults(v *corev1.PersistentVolume) {
	if v.Status.Phase == "" {
		v.Status.Phase = corev1.VolumePending
	}
	if v.Spec.PersistentVolumeReclaimPolicy == "" {
		v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if v.Spec.VolumeMode == nil {
		v.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	if s := v.Spec.HostPath; s != nil && s.Type == nil {
		s.Type = ptrTo(corev1.HostPathUnset)
	}
}

var (
	accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}
	volumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
)

// validateAccessModes mirrors ValidatePersistentVolumeClaimSpec's and
// ValidatePersistentVolumeSpec's access mode checks
// (pkg/apis/core/validation/validation.go).
func validateAccessModes(f string, modes []corev1.PersistentVolumeAccessMode) *fieldErr {
	if len(modes) == 0 {
		return fe(f, "at least 1 access mode is required; expected %s", quoteAll(accessModes...))
	}
	for i, m := range modes {
		if e := oneOf(f+"["+strconv.Itoa(i)+"]", m, accessModes...); e != nil {
			return e
		}
		if m == corev1.ReadWriteOncePod && len(modes) > 1 {
			return fe(f, "may not use ReadWriteOncePod with other access modes; expected ReadWriteOncePod alone")
		}
	}
	return nil
}

// validateStorageClassName checks storageClassName as a DNS subdomain.
func validateStorageClassName(f string, name *string) *fieldErr {
	if name != nil && *name != "" && len(validation.IsDNS1123Subdomain(*name)) > 0 {
		return fe(f, "invalid value %q; %s", *name, expectSubdomain)
	}
	return nil
}

// validateClaim mirrors ValidatePersistentVolumeClaim: the name, at least
// one access mode, a positive storage request, the volume mode, the storage
// class name, and a known status phase.
func validateClaim(c *corev1.PersistentVolumeClaim) *fieldErr {
	if e := validateMeta(&c.ObjectMeta, true, "data"); e != nil {
		return e
	}
	if e := validateAccessModes("spec.accessModes", c.Spec.AccessModes); e != nil {
		return e
	}
	q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	switch {
	case !ok:
		return fe("spec.resources.requests[storage]", "required value; expected the size the claim asks for, such as 1Gi")
	case q.Sign() <= 0:
		return fe("spec.resources.requests[storage]", "invalid value %q: must be greater than zero; expected a size such as 1Gi", q.String())
	}
	if e := oneOf("spec.volumeMode", *c.Spec.VolumeMode, volumeModes...); e != nil {
		return e
	}
	if e := validateStorageClassName("spec.storageClassName", c.Spec.StorageClassName); e != nil {
		return e
	}
	if c.Spec.VolumeName != "" && len(validation.IsDNS1123Subdomain(c.Spec.VolumeName)) > 0 {
		return fe("spec.volumeName", "invalid value %q; %s (the name of a PersistentVolume)", c.Spec.VolumeName, expectSubdomain)
	}
	return oneOf("status.phase", c.Status.Phase, corev1.ClaimPending, corev1.ClaimBound, corev1.ClaimLost)
}

// validatePV mirrors ValidatePersistentVolume and
// ValidatePersistentVolumeSpec: the name, access modes, a capacity with
// storage only, exactly one volume source, the hostPath/local/csi source's
// required fields, node affinity (required for a local volume), the
// reclaim policy, volume mode and storage class name.
func validatePV(v *corev1.PersistentVolume) *fieldErr {
	if e := validateMeta(&v.ObjectMeta, false, "pv-data"); e != nil {
		return e
	}
	s := &v.Spec
	if e := validateAccessModes("spec.accessModes", s.AccessModes); e != nil {
		return e
	}
	if len(s.Capacity) == 0 {
		return fe("spec.capacity", "required value; expected storage, such as capacity: {storage: 1Gi}")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Capacity)) {
		if k != corev1.ResourceStorage {
			return fe("spec.capacity["+string(k)+"]", "unsupported value %q; expected \"storage\"", string(k))
		}
	}
	if q := s.Capacity[corev1.ResourceStorage]; q.Cmp(resource.Quantity{}) < 0 {
		return fe("spec.capacity[storage]", "invalid value %q: must be greater than or equal to 0", q.String())
	}
	switch n := countPVSources(&s.PersistentVolumeSource); {
	case n == 0:
		return fe("spec", "must specify a volume type; expected one source such as hostPath, local or csi")
	case n > 1:
		return fe("spec", "may not specify more than 1 volume type; expected exactly one source")
	}
	switch {
	case s.HostPath != nil:
		if s.HostPath.Path == "" {
			return fe("spec.hostPath.path", "required value; expected an absolute path on the node")
		}
		if hasBackstep(s.HostPath.Path) {
			return fe("spec.hostPath.path", "must not contain '..'; expected a path without backsteps")
		}
		if e := oneOf("spec.hostPath.type", *s.HostPath.Type, corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
			corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev); e != nil {
			return e
		}
	case s.Local != nil:
		if s.Local.Path == "" {
			return fe("spec.local.path", "required value; expected an absolute path on the node")
		}
		if hasBackstep(s.Local.Path) {
			return fe("spec.local.path", "must not contain '..'; expected a path without backsteps")
		}
		if s.NodeAffinity == nil || s.NodeAffinity.Required == nil {
			return fe("spec.nodeAffinity", "Local volume requires node affinity; expected nodeAffinity.required naming the node that has the path")
		}
	case s.CSI != nil:
		if s.CSI.Driver == "" {
			return fe("spec.csi.driver", "required value; expected the CSI driver's name, such as hostpath.csi.k8s.io")
		}
		if len(validation.IsDNS1123Subdomain(strings.ToLower(s.CSI.Driver))) > 0 {
			return fe("spec.csi.driver", "invalid value %q; %s", s.CSI.Driver, expectSubdomain)
		}
		if s.CSI.VolumeHandle == "" {
			return fe("spec.csi.volumeHandle", "required value; expected the driver's ID of the volume")
		}
	}
	if na := s.NodeAffinity; na != nil {
		if na.Required == nil {
			return fe("spec.nodeAffinity.required", "required value; expected nodeSelectorTerms")
		}
		if len(na.Required.NodeSelectorTerms) == 0 {
			return fe("spec.nodeAffinity.required.nodeSelectorTerms", "must have at least one node selector term")
		}
		for i, t := range na.Required.NodeSelectorTerms {
			tf := "spec.nodeAffinity.required.nodeSelectorTerms[" + strconv.Itoa(i) + "]"
			for j, r := range t.MatchExpressions {
				rf := tf + ".matchExpressions[" + strconv.Itoa(j) + "]"
				if e := oneOf(rf+".operator", r.Operator, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
					corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt); e != nil {
					return e
				}
				if len(content.IsLabelKey(r.Key)) > 0 {
					return fe(rf+".key", "invalid value %q; %s", r.Key, expectLabelKey)
				}
			}
		}
	}
	if e := oneOf("spec.persistentVolumeReclaimPolicy", s.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimDelete,
		corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain); e != nil {
		return e
	}
	if e := oneOf("spec.volumeMode", *s.VolumeMode, volumeModes...); e != nil {
		return e
	}
	if e := validateStorageClassName("spec.storageClassName", &s.StorageClassName); e != nil {
		return e
	}
	if r := s.ClaimRef; r != nil && r.Name == "" {
		return fe("spec.claimRef.name", "required value; expected the name of the claim this volume is bound to")
	}
	return nil
}

// countPVSources returns how many of a PV's source fields are set.
func countPVSources(s *corev1.PersistentVolumeSource) int {
	return countPointers(s)
}
