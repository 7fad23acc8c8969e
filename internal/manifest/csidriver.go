package manifest

import (
	"strconv"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// KindCSIDriver is the storage.k8s.io/v1 object that tells the kubelet's
// CSI plugin how to treat a driver (attach, pod info, fsGroup, lifecycle
// modes), as it reads it from the API server.
const KindCSIDriver = "CSIDriver"

// csiDriverAPIVersion is the only version of CSIDriver served in v1.37.
const csiDriverAPIVersion = "storage.k8s.io/v1"

// CSIDriver returns the CSIDriver name of the bundle, if the file has it
// (or internal/cluster read it).
func (b *Bundle) CSIDriver(name string) (*storagev1.CSIDriver, bool) {
	d, ok := b.CSIDrivers[name]
	return d, ok
}

// csiDriver decodes, defaults and validates a CSIDriver document.
func (p *parser) csiDriver(js []byte) error {
	d := &storagev1.CSIDriver{}
	if err := p.decode(js, d); err != nil {
		return err
	}
	SetCSIDriverDefaults(d)
	if e := validateCSIDriver(d); e != nil {
		return p.errf(e.field, "%s", e.msg)
	}
	if err := p.checkDuplicate(KindCSIDriver, d.Name); err != nil {
		return err
	}
	if p.bundle.CSIDrivers == nil {
		p.bundle.CSIDrivers = map[string]*storagev1.CSIDriver{}
	}
	p.bundle.CSIDrivers[d.Name] = d
	return nil
}

// SetCSIDriverDefaults mirrors SetDefaults_CSIDriver
// (pkg/apis/storage/v1/defaults.go) with v1.37's default feature gates:
// attachRequired true, podInfoOnMount, storageCapacity, requiresRepublish
// and seLinuxMount false, fsGroupPolicy ReadWriteOnceWithFSType,
// volumeLifecycleModes [Persistent].
func SetCSIDriverDefaults(d *storagev1.CSIDriver) {
	s := &d.Spec
	f := false
	if s.AttachRequired == nil {
		s.AttachRequired = ptrTo(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptrTo(f)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptrTo(f)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptrTo(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptrTo(f)
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = ptrTo(f)
	}
}

// validateCSIDriver mirrors ValidateCSIDriver
// (pkg/apis/storage/validation/validation.go) after defaulting: the name
// as ValidateCSIDriverName (a DNS-1123 subdomain, case-insensitive, at most
// 63 characters), no namespace, fsGroupPolicy, tokenRequests (unique
// audiences, expirationSeconds from 10 minutes to 2^32 s),
// volumeLifecycleModes, nodeAllocatableUpdatePeriodSeconds ≥ 10, and
// serviceAccountTokenInSecrets only with tokenRequests.
func validateCSIDriver(d *storagev1.CSIDriver) *fieldErr {
	name := d.Name
	switch {
	case name == "":
		return fe("metadata.name", "required value; expected the CSI driver's name, such as %q", "hostpath.csi.k8s.io")
	case len(name) > 63:
		return fe("metadata.name", "too long: %d characters; expected a CSI driver name of at most 63 characters", len(name))
	case len(validation.IsDNS1123Subdomain(strings.ToLower(name))) > 0:
		return fe("metadata.name", "invalid value %q; expected a CSI driver name: letters, digits, '-' and '.', starting and ending with a letter or digit, such as \"hostpath.csi.k8s.io\"", name)
	}
	m := d.ObjectMeta
	m.Name = "x" // checked above, with the CSI rules
	if e := validateMeta(&m, false, "x"); e != nil {
		return e
	}
	s := &d.Spec
	if e := oneOf("spec.fsGroupPolicy", *s.FSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy); e != nil {
		return e
	}
	seen := map[string]bool{}
	for i, tr := range s.TokenRequests {
		path := "spec.tokenRequests[" + strconv.Itoa(i) + "]"
		if seen[tr.Audience] {
			return fe(path+".audience", "duplicate value %q; expected each audience once", tr.Audience)
		}
		seen[tr.Audience] = true
		if tr.ExpirationSeconds == nil {
			continue
		}
		if x := *tr.ExpirationSeconds; x < 600 {
			return fe(path+".expirationSeconds", "invalid value %d: may not specify a duration less than 10 minutes; expected at least 600", x)
		} else if x > 1<<32 {
			return fe(path+".expirationSeconds", "invalid value %d: may not specify a duration larger than 2^32 seconds", x)
		}
	}
	for i, mode := range s.VolumeLifecycleModes {
		if e := oneOf("spec.volumeLifecycleModes["+strconv.Itoa(i)+"]", mode, storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral); e != nil {
			return e
		}
	}
	if x := s.NodeAllocatableUpdatePeriodSeconds; x != nil && *x < 10 {
		return fe("spec.nodeAllocatableUpdatePeriodSeconds", "invalid value %d: must be greater than or equal to 10 seconds", *x)
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		return fe("spec.serviceAccountTokenInSecrets", "invalid value %t: serviceAccountTokenInSecrets is set but no tokenRequests are specified", *s.ServiceAccountTokenInSecrets)
	}
	return nil
}

// KindVolumeAttachment is the storage.k8s.io/v1 object the attach/detach
// controller makes when it attaches a CSI volume to a node: the kubelet
// waits for it before staging a volume whose driver needs attach, and
// sends its status.attachmentMetadata as the publish context
// (getPublishContext, pkg/volume/csi/csi_plugin.go).
const KindVolumeAttachment = "VolumeAttachment"

// VolumeAttachment returns the VolumeAttachment name of the bundle.
func (b *Bundle) VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool) {
	a, ok := b.VolumeAttachments[name]
	return a, ok
}

// volumeAttachment decodes and validates a VolumeAttachment document.
func (p *parser) volumeAttachment(js []byte) error {
	a := &storagev1.VolumeAttachment{}
	if err := p.decode(js, a); err != nil {
		return err
	}
	if e := validateVolumeAttachment(a); e != nil {
		return p.errf(e.field, "%s", e.msg)
	}
	if err := p.checkDuplicate(KindVolumeAttachment, a.Name); err != nil {
		return err
	}
	if p.bundle.VolumeAttachments == nil {
		p.bundle.VolumeAttachments = map[string]*storagev1.VolumeAttachment{}
	}
	p.bundle.VolumeAttachments[a.Name] = a
	return nil
}

// validateVolumeAttachment mirrors ValidateVolumeAttachment
// (pkg/apis/storage/validation/validation.go): the name, no namespace,
// spec.attacher a CSI driver name, exactly one of spec.source's
// persistentVolumeName and inlineVolumeSpec (podstep reads the first),
// spec.nodeName a node name.
func validateVolumeAttachment(a *storagev1.VolumeAttachment) *fieldErr {
	if e := validateMeta(&a.ObjectMeta, false, "csi-0123abcd"); e != nil {
		return e
	}
	s := &a.Spec
	switch d := s.Attacher; {
	case d == "":
		return fe("spec.attacher", "required value; expected the CSI driver's name")
	case len(d) > 63 || len(validation.IsDNS1123Subdomain(strings.ToLower(d))) > 0:
		return fe("spec.attacher", "invalid value %q; expected a CSI driver name: letters, digits, '-' and '.', at most 63 characters", d)
	}
	switch src := s.Source; {
	case src.PersistentVolumeName == nil && src.InlineVolumeSpec == nil:
		return fe("spec.source", "required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName")
	case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
		return fe("spec.source", "forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName")
	case src.InlineVolumeSpec != nil:
		return fe("spec.source.inlineVolumeSpec", "not supported by podstep: it reads VolumeAttachments of PersistentVolumes (persistentVolumeName)")
	case *src.PersistentVolumeName == "":
		return fe("spec.source.persistentVolumeName", "required value: must specify non empty persistentVolumeName")
	case len(validation.IsDNS1123Subdomain(*src.PersistentVolumeName)) > 0:
		return fe("spec.source.persistentVolumeName", "invalid value %q; %s", *src.PersistentVolumeName, expectSubdomain)
	}
	if len(validation.IsDNS1123Subdomain(s.NodeName)) > 0 {
		return fe("spec.nodeName", "invalid value %q; %s", s.NodeName, expectSubdomain)
	}
	return nil
}
