package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Plugin names of the persistent volumes podstep resolves.
const (
	PluginLocal = "kubernetes.io/local-volume"
	PluginCSI   = "kubernetes.io/csi"
)

// ClaimSource resolves PersistentVolumeClaims and PersistentVolumes, as the
// kubelet's desired-state populator reads them from the API server
// (*manifest.Bundle implements it).
type ClaimSource interface {
	PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, bool)
	PersistentVolume(name string) (*corev1.PersistentVolume, bool)
}

// ClaimError is a claim or volume the kubelet cannot use: Msg is the
// kubelet's text, Fix what to change so that it can.
type ClaimError struct {
	Msg string
	Fix string
}

func (e *ClaimError) Error() string { return e.Msg }

// Hint says what to change.
func (e *ClaimError) Hint() string { return e.Fix }

// Hint returns what to change for a volume error that has a way forward
// (a *ClaimError, a token or ConfigMap podstep stood in for), or "".
func Hint(err error) string {
	var h interface{ Hint() string }
	for err != nil {
		if x, ok := err.(interface{ Hint() string }); ok {
			h = x
			break
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		err = u.Unwrap()
	}
	if h == nil {
		return ""
	}
	return h.Hint()
}

// Claim is what a persistentVolumeClaim or ephemeral volume resolved to.
type Claim struct {
	PVC *corev1.PersistentVolumeClaim
	PV  *corev1.PersistentVolume
	// ReadOnly is the pod volume's persistentVolumeClaim.readOnly.
	ReadOnly bool
}

// ClaimName is the claim a volume names: persistentVolumeClaim.claimName,
// or for a generic ephemeral volume POD-VOLUME
// (ephemeral.VolumeClaimName); "" for other volumes.
func ClaimName(pod *corev1.Pod, vol corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, &vol)
	}
	return ""
}

// claimFix is the way forward for a claim the kubelet cannot use.
func claimFix(ns, name, what string) string {
	return fmt.Sprintf("%s; with --kubeconfig (or run --pod) podstep reads PersistentVolumeClaim %s/%s and its PersistentVolume from the API server, else put both in the manifest (a bound claim: status.phase Bound, spec.volumeName; the volume's spec.claimRef naming the claim and its uid)", what, ns, name)
}

// ResolveClaim mirrors the desired-state populator's createVolumeSpec for
// a persistentVolumeClaim or ephemeral volume
// (pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go):
// getPVCExtractPV (the claim exists, is not being deleted, is Bound, has a
// volumeName), for an ephemeral volume VolumeIsForPod (the pod controls the
// claim), getPVSpec (the PV exists, its claimRef's UID is the claim's), then
// the volume mode against the containers' volumeMounts and volumeDevices.
// owner is the UID the pod has in the API server (the pod's own UID unless
// podstep replays a cluster pod under its own). Errors are *ClaimError,
// with the kubelet's text.
func ResolveClaim(src ClaimSource, pod *corev1.Pod, owner types.UID, vol corev1.Volume) (*Claim, error) {
	ns, name := pod.Namespace, ClaimName(pod, vol)
	c := &Claim{}
	if vol.PersistentVolumeClaim != nil {
		c.ReadOnly = vol.PersistentVolumeClaim.ReadOnly
	}
	processing := func(msg string) string { return fmt.Sprintf("error processing PVC %s/%s: %s", ns, name, msg) }
	var pvc *corev1.PersistentVolumeClaim
	ok := false
	if src != nil {
		pvc, ok = src.PersistentVolumeClaim(ns, name)
	}
	if !ok {
		what := "add the claim"
		if vol.Ephemeral != nil {
			what = fmt.Sprintf("a generic ephemeral volume's claim is %s-%s, made by the API server's ephemeral volume controller from the template and owned by the pod; add it", pod.Name, vol.Name)
		}
		return nil, &ClaimError{
			Msg: processing(fmt.Sprintf("failed to fetch PVC from API server: persistentvolumeclaims %q not found", name)),
			Fix: claimFix(ns, name, what),
		}
	}
	c.PVC = pvc
	switch {
	case pvc.DeletionTimestamp != nil:
		return nil, &ClaimError{Msg: processing("PVC is being deleted"), Fix: fmt.Sprintf("the claim has metadata.deletionTimestamp: the kubelet starts no pod on a claim being deleted; remove deletionTimestamp from PersistentVolumeClaim %s/%s (or use another claim)", ns, name)}
	case pvc.Status.Phase != corev1.ClaimBound:
		return nil, &ClaimError{Msg: processing("PVC is not bound"), Fix: claimFix(ns, name, fmt.Sprintf("the claim's status.phase is %s: a provisioner or the PV controller binds it to a PersistentVolume; give the claim status.phase Bound and spec.volumeName", pvc.Status.Phase))}
	case pvc.Spec.VolumeName == "":
		return nil, &ClaimError{Msg: processing("PVC has empty pvc.Spec.VolumeName"), Fix: fmt.Sprintf("set spec.volumeName of PersistentVolumeClaim %s/%s to the PersistentVolume it is bound to", ns, name)}
	}
	if vol.Ephemeral != nil {
		p := pod
		if owner != "" && owner != pod.UID {
			p = pod.DeepCopy()
			p.UID = owner
		}
		if err := ephemeral.VolumeIsForPod(p, pvc); err != nil {
			return nil, &ClaimError{Msg: err.Error(), Fix: fmt.Sprintf("the claim of a generic ephemeral volume must be controlled by its pod: give PersistentVolumeClaim %s/%s an ownerReference {apiVersion: v1, kind: Pod, name: %s, uid: %s, controller: true}", ns, name, p.Name, p.UID)}
		}
	}
	pvName := pvc.Spec.VolumeName
	var pv *corev1.PersistentVolume
	if src != nil {
		pv, ok = src.PersistentVolume(pvName)
	}
	if !ok {
		return nil, &ClaimError{
			Msg: processing(fmt.Sprintf("failed to fetch PV %s from API server: persistentvolumes %q not found", pvName, pvName)),
			Fix: fmt.Sprintf("add PersistentVolume %s (claimRef: {namespace: %s, name: %s, uid: %q}) to the manifest, or read it from the API server with --kubeconfig", pvName, ns, name, pvc.UID),
		}
	}
	c.PV = pv
	switch {
	case pv.Spec.ClaimRef == nil:
		return nil, &ClaimError{Msg: processing(fmt.Sprintf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pvName)),
			Fix: fmt.Sprintf("give PersistentVolume %s spec.claimRef {namespace: %s, name: %s, uid: %q}", pvName, ns, name, pvc.UID)}
	case pv.Spec.ClaimRef.UID != pvc.UID:
		return nil, &ClaimError{Msg: processing(fmt.Sprintf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pvName, pv.Spec.ClaimRef.UID, pvc.UID)),
			Fix: fmt.Sprintf("PersistentVolume %s is bound to another claim (uid %q): set its spec.claimRef.uid to %q, the uid of PersistentVolumeClaim %s/%s, or use the claim it is bound to", pvName, pv.Spec.ClaimRef.UID, pvc.UID, ns, name)}
	}
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	mounts, devices := volumeUse(pod, vol.Name)
	if mounts && mode != corev1.PersistentVolumeFilesystem {
		return nil, &ClaimError{Msg: fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeMounts", vol.Name, mode),
			Fix: fmt.Sprintf("PersistentVolume %s is a raw block device: use it in volumeDevices (devicePath), not volumeMounts", pvName)}
	}
	if devices && mode != corev1.PersistentVolumeBlock {
		return nil, &ClaimError{Msg: fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeDevices", vol.Name, mode),
			Fix: fmt.Sprintf("PersistentVolume %s is a filesystem: use it in volumeMounts (mountPath), not volumeDevices", pvName)}
	}
	return c, nil
}

// volumeUse says whether a container (init and ephemeral ones too) mounts
// the volume name and whether one uses it as a device
// (volumeutil.GetPodVolumeNames).
func volumeUse(pod *corev1.Pod, name string) (mounts, devices bool) {
	visit := func(ms []corev1.VolumeMount, ds []corev1.VolumeDevice) {
		for _, m := range ms {
			mounts = mounts || m.Name == name
		}
		for _, d := range ds {
			devices = devices || d.Name == name
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			visit(c.VolumeMounts, c.VolumeDevices)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.VolumeMounts, c.VolumeDevices)
	}
	return mounts, devices
}

// CheckNodeAffinity mirrors operation_generator.go checkNodeAffinity (in
// GenerateMountVolumeFunc, before the plugin's SetUp): the PV's required
// node affinity against the node's labels (CheckNodeAffinity of
// k8s.io/component-helpers/storage/volume, see checkNodeAffinity). The error is an *Error with the
// kubelet's prefix "MountVolume.NodeAffinity check failed".
func CheckNodeAffinity(vol string, pv *corev1.PersistentVolume, node string, labels map[string]string) error {
	if err := checkNodeAffinity(pv, labels); err != nil {
		return &Error{Volume: vol, Op: "MountVolume.NodeAffinity check failed", Err: &ClaimError{Msg: err.Error(),
			Fix: fmt.Sprintf("PersistentVolume %s may be used only on nodes its spec.nodeAffinity selects, and node %s's labels do not match: run with --node FILE giving a Node whose labels match (or add such a Node to the manifest)", pv.Name, node)}}
	}
	return nil
}

// migrated names, per in-tree source, the CSI driver CSI migration moves
// it to (pkg/volume/csimigration, k8s.io/csi-translation-lib): the kubelet
// has no in-tree code for these any more.
var migrated = map[string]string{
	"awsElasticBlockStore": "ebs.csi.aws.com",
	"gcePersistentDisk":    "pd.csi.storage.gke.io",
	"azureDisk":            "disk.csi.azure.com",
	"azureFile":            "file.csi.azure.com",
	"cinder":               "cinder.csi.openstack.org",
	"vsphereVolume":        "csi.vsphere.vmware.com",
	"portworxVolume":       "pxd.portworx.com",
}

// pvSourceKind names the PV's source by its API field name.
func pvSourceKind(pv *corev1.PersistentVolume) string {
	return kindOf(pv.Spec.PersistentVolumeSource)
}

// csiError is a CSI volume podstep cannot publish: the kubelet's text for
// a driver that is not registered on the node (csi_client.go
// newCsiDriverClient), under the operation that asks for the client
// (stage: attacher.MountDevice for a PV, SetUp for an inline volume), and
// how to give podstep the driver.
func csiError(vol, driver string, pv bool, fix string) error {
	op, inner := "MountVolume.SetUp failed", "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: "
	if pv {
		op, inner = "MountVolume.MountDevice failed", "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: "
	}
	return &Error{Volume: vol, Op: op, Err: &UnsupportedError{Kind: "csi", Need: inner + fmt.Sprintf("driver name %s not found in the list of registered CSI drivers", driver), Fix: fix}}
}

// preparePV resolves a persistentVolumeClaim or ephemeral volume: the
// claim and its PV (ResolveClaim), the PV's node affinity, then the PV's
// plugin: hostPath (as a hostPath volume), local (a bind mount of the
// local path under pods/UID/volumes/kubernetes.io~local-volume/PV; on the
// simulator the path itself, as for hostPath), CSI (no driver yet). It sets
// p.dir and p.plugin.
func (p *Prepared) preparePV() error {
	h := p.host
	c, err := ResolveClaim(h.Claims, p.pod, h.Owner, p.vol)
	if err != nil {
		return &populatorError{err}
	}
	p.claim = c
	pv := c.PV
	if err := CheckNodeAffinity(p.vol.Name, pv, h.NodeName, h.NodeLabels); err != nil {
		return err
	}
	kind := pvSourceKind(pv)
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock && pv.Spec.CSI == nil {
		return &UnsupportedError{Kind: kind, Need: fmt.Sprintf("PersistentVolume %s has volumeMode Block: the kubelet maps a raw block volume into the pod with the plugin's BlockVolumeMapper (volumeDevices); podstep does not map block volumes yet", pv.Name),
			Fix: "use a Filesystem PersistentVolume in volumeMounts, or run this pod on a real node"}
	}
	p.notes = append(p.notes, fmt.Sprintf("claim %s/%s is Bound to PersistentVolume %s (%s)", c.PVC.Namespace, c.PVC.Name, pv.Name, kind))
	switch {
	case pv.Spec.HostPath != nil:
		p.plugin = PluginHostPath
		p.dir = pv.Spec.HostPath.Path
		return prepareHostPath(pv.Spec.HostPath)
	case pv.Spec.Local != nil:
		p.plugin = PluginLocal
		if !exists(pv.Spec.Local.Path) {
			p.dir = filepath.Join(p.podDir(), "volumes", "kubernetes.io~local-volume", pv.Name)
			if h.Simulated {
				p.dir = pv.Spec.Local.Path
			}
			return &ClaimError{Msg: fmt.Sprintf("path %q does not exist", pv.Spec.Local.Path), Fix: fmt.Sprintf("local PersistentVolume %s names %s, which this node does not have: create it, or run on the node that has it", pv.Name, pv.Spec.Local.Path)}
		}
		kind, err := localPathKind(pv)
		if err != nil {
			return &ClaimError{Msg: err.Error(), Fix: fmt.Sprintf("local PersistentVolume %s names %s (%s): the kubelet's local volume plugin mounts a directory or a block device", pv.Name, pv.Spec.Local.Path, kind)}
		}
		block := kind == corev1.HostPathBlockDev
		switch {
		case h.Simulated && block:
			p.dir = filepath.Join(p.podDir(), "volumes", "kubernetes.io~local-volume", pv.Name)
			p.notes = append(p.notes, fmt.Sprintf("%s is a block device: on a real runtime podstep formats it when it has no file system and mounts it at %s, then bind-mounts that into the pod, as the kubelet's local volume plugin does (MountDevice, SetUpAt); on the simulator nothing is formatted or mounted", pv.Spec.Local.Path, filepath.Join(LocalDeviceMountsDir(h.RootDir), pv.Name)))
		case h.Simulated:
			p.dir = pv.Spec.Local.Path
			p.notes = append(p.notes, "on the simulator the local path is used as is, as for hostPath; on a real runtime podstep bind-mounts it under pods/UID/volumes/kubernetes.io~local-volume/"+pv.Name+" as the kubelet's local volume plugin does")
		default:
			p.dir = filepath.Join(p.podDir(), "volumes", "kubernetes.io~local-volume", pv.Name)
			if block {
				p.localDevice = pv.Spec.Local.Path
			}
		}
		return nil
	case pv.Spec.CSI != nil:
		p.plugin = PluginCSI
		return p.prepareCSI(pv)
	}
	if driver, ok := migrated[kind]; ok {
		return &UnsupportedError{Kind: kind, Need: fmt.Sprintf("PersistentVolume %s is an in-tree %s volume: CSI migration moves it to the CSI driver %s, and the kubelet has no in-tree code for it", pv.Name, kind, driver),
			Fix: fmt.Sprintf("the node needs the CSI driver %s, and the PersistentVolume a spec.csi source for it (as CSI migration translates it)", driver)}
	}
	return unsupportedKind(kind)
}

// podDir is pods/<uid> of the pod, from the volume's planned directory
// (pods/<uid>/volumes/<plugin>/<name>).
func (p *Prepared) podDir() string {
	return filepath.Dir(filepath.Dir(filepath.Dir(p.dir)))
}

// populatorError is an error of the desired-state populator, which the
// kubelet reports as is (no "MountVolume.SetUp failed" prefix).
type populatorError struct{ err error }

func (e *populatorError) Error() string { return e.err.Error() }
func (e *populatorError) Unwrap() error { return e.err }

// claimDescription says what a persistent volume resolved to, for the
// step's details.
func (c *Claim) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "claim %s/%s → PersistentVolume %s", c.PVC.Namespace, c.PVC.Name, c.PV.Name)
	if c.ReadOnly {
		sb.WriteString(", read-only")
	}
	return sb.String()
}

// applyPV makes a persistent volume: a hostPath PV as a hostPath volume
// (hostPathMounter.SetUp: the type check, *OrCreate), a local PV as the
// local plugin's SetUpAt does (pkg/volume/local/local.go: a bind mount of
// the path at pods/UID/volumes/kubernetes.io~local-volume/PV, remounted
// read-only for a read-only claim), or on the simulator its path as is.
func (p *Prepared) applyPV(ctx context.Context, r *Result) error {
	pv := p.claim.PV
	switch {
	case pv.Spec.HostPath != nil:
		created, err := applyHostPath(pv.Spec.HostPath)
		r.Created = created
		if created {
			r.Notes = append(r.Notes, "created "+p.dir+"; the kubelet never removes a hostPath, nor does podstep's teardown")
		}
		return err
	case pv.Spec.Local != nil:
		if p.host.Simulated {
			return nil
		}
		if !p.host.Mount {
			return &ClaimError{Msg: fmt.Sprintf("cannot bind-mount %s at %s: bind mounts need root", pv.Spec.Local.Path, p.dir), Fix: "run podstep as root (the kubelet runs as root), or use the simulator (--runtime sim)"}
		}
		src := pv.Spec.Local.Path
		if p.localDevice != "" {
			dm, notes, err := mountLocalDevice(ctx, pv, p.localDevice, filepath.Join(LocalDeviceMountsDir(p.host.RootDir), pv.Name), p.claim.ReadOnly)
			r.Notes = append(r.Notes, notes...)
			if err != nil {
				return &Error{Volume: p.vol.Name, Op: "MountVolume.MountDevice failed", Err: err}
			}
			r.Device = dm
			src = dm.Path
		}
		if err := os.MkdirAll(p.dir, 0o750); err != nil {
			return err
		}
		if err := bindMount(src, p.dir, p.claim.ReadOnly); err != nil {
			return fmt.Errorf("mount failed: bind %s to %s: %w", src, p.dir, err)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("bind mount of %s (local PersistentVolume %s), unmounted at teardown", src, pv.Name))
		if !p.claim.ReadOnly {
			// SetUpAt: the volume's ownership, on its first mount
			// (ChangePermissions when no other pod mounts the path).
			return p.setOwnership(r, false)
		}
	}
	return nil
}

// checkNodeAffinity is CheckNodeAffinity of
// k8s.io/component-helpers/storage/volume/helpers.go: the PV's required
// node selector terms matched against a node with only the labels given.
// (That package's imports would link a diff library into podstep.)
func checkNodeAffinity(pv *corev1.PersistentVolume, labels map[string]string) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	ok, err := corev1helpers.MatchNodeSelectorTerms(n, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no matching NodeSelectorTerms")
	}
	return nil
}

// PlannedPath is where vol will be on the host (Path), with a
// persistentVolumeClaim or ephemeral volume resolved to its PV's place: a
// hostPath PV's path, a local PV's pods/UID/volumes/kubernetes.io~local-volume/PV
// (its path on the simulator, unless a block device), a CSI PV's
// pods/UID/volumes/kubernetes.io~csi/PV/mount. A claim that does not
// resolve keeps Path's.
func (h *Host) PlannedPath(pod *corev1.Pod, podDir string, vol corev1.Volume) string {
	if vol.PersistentVolumeClaim == nil && vol.Ephemeral == nil {
		return Path(podDir, vol)
	}
	c, err := ResolveClaim(h.Claims, pod, h.Owner, vol)
	if err != nil {
		return Path(podDir, vol)
	}
	switch s := c.PV.Spec; {
	case s.HostPath != nil:
		return s.HostPath.Path
	case s.Local != nil && h.Simulated && !isBlockDevice(s.Local.Path):
		return s.Local.Path
	case s.Local != nil:
		return filepath.Join(podDir, "volumes", "kubernetes.io~local-volume", c.PV.Name)
	case s.CSI != nil:
		return filepath.Join(podDir, "volumes", "kubernetes.io~csi", c.PV.Name, "mount")
	}
	return Path(podDir, vol)
}
