package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/volume"
)

// fetchClaims GETs the PersistentVolumeClaim of each persistentVolumeClaim
// and generic ephemeral volume of the pod, and the PersistentVolume a
// claim's spec.volumeName names, unless the file has them: what the
// kubelet's desired-state populator reads (getPVCExtractPV and getPVSpec,
// pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go).
// A NotFound object is left out, so that the volumes step gives the
// kubelet's error for it. (get persistentvolumeclaims, persistentvolumes)
func (c *Client) fetchClaims(ctx context.Context, b *manifest.Bundle, r *Resolved) error {
	pod := b.Pod
	ns := pod.Namespace
	for _, v := range pod.Spec.Volumes {
		name := volume.ClaimName(pod, v)
		if name == "" {
			continue
		}
		pvc, ok := b.PersistentVolumeClaim(ns, name)
		if !ok {
			got, err := kube.Get[corev1.PersistentVolumeClaim](ctx, c.API, kube.PersistentVolumeClaims, ns, name)
			err = c.classify(err, "get", "persistentvolumeclaims", ns, name)
			f := Fetched{Kind: manifest.KindPersistentVolumeClaim, Namespace: ns, Name: name, Why: "volume " + v.Name}
			switch {
			case err == nil:
				if b.Claims == nil {
					b.Claims = map[string]*corev1.PersistentVolumeClaim{}
				}
				b.Claims[ns+"/"+name] = got
				b.Origins[manifest.OriginKey(manifest.KindPersistentVolumeClaim, ns, name)] = c.origin(got.ObjectMeta)
				f.Found, f.ResourceVersion = true, got.ResourceVersion
				pvc = got
			case apierrors.IsNotFound(err):
			default:
				return err
			}
			r.Fetched = append(r.Fetched, f)
		}
		if pvc == nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pvName := pvc.Spec.VolumeName
		if _, ok := b.PersistentVolume(pvName); ok {
			continue
		}
		pv, err := kube.Get[corev1.PersistentVolume](ctx, c.API, kube.PersistentVolumes, "", pvName)
		err = c.classify(err, "get", "persistentvolumes", "", pvName)
		f := Fetched{Kind: manifest.KindPersistentVolume, Name: pvName, Why: "claim " + name}
		switch {
		case err == nil:
			if b.Volumes == nil {
				b.Volumes = map[string]*corev1.PersistentVolume{}
			}
			b.Volumes[pvName] = pv
			b.Origins[manifest.OriginKey(manifest.KindPersistentVolume, "", pvName)] = c.origin(pv.ObjectMeta)
			f.Found, f.ResourceVersion = true, pv.ResourceVersion
		case apierrors.IsNotFound(err):
		default:
			return err
		}
		r.Fetched = append(r.Fetched, f)
	}
	return nil
}

// fetchCSIDrivers GETs the CSIDriver of every CSI driver the pod's volumes
// use (an inline csi volume's, a claim's CSI PersistentVolume's), unless
// the file has it: what the kubelet's CSI plugin reads through its
// CSIDriver lister (getCSIDriver, pkg/volume/csi/csi_plugin.go). A
// NotFound one is left out: the kubelet then treats the driver as needing
// attach and serving only persistent volumes. (get csidrivers)
func (c *Client) fetchCSIDrivers(ctx context.Context, b *manifest.Bundle, r *Resolved) error {
	pod := b.Pod
	seen := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		driver := ""
		switch {
		case v.CSI != nil:
			driver = v.CSI.Driver
		default:
			name := volume.ClaimName(pod, v)
			if name == "" {
				continue
			}
			pvc, ok := b.PersistentVolumeClaim(pod.Namespace, name)
			if !ok {
				continue
			}
			if pv, ok := b.PersistentVolume(pvc.Spec.VolumeName); ok && pv.Spec.CSI != nil {
				driver = pv.Spec.CSI.Driver
			}
		}
		if driver == "" || seen[driver] {
			continue
		}
		seen[driver] = true
		if _, ok := b.CSIDriver(driver); ok {
			continue
		}
		got, err := kube.Get[storagev1.CSIDriver](ctx, c.API, kube.CSIDrivers, "", driver)
		err = c.classify(err, "get", "csidrivers", "", driver)
		f := Fetched{Kind: manifest.KindCSIDriver, Name: driver, Why: "volume " + v.Name}
		switch {
		case err == nil:
			if b.CSIDrivers == nil {
				b.CSIDrivers = map[string]*storagev1.CSIDriver{}
			}
			b.CSIDrivers[driver] = got
			b.Origins[manifest.OriginKey(manifest.KindCSIDriver, "", driver)] = c.origin(got.ObjectMeta)
			f.Found, f.ResourceVersion = true, got.ResourceVersion
		case apierrors.IsNotFound(err):
		default:
			return err
		}
		r.Fetched = append(r.Fetched, f)
	}
	return nil
}

// fetchVolumeAttachments GETs, for each claim's CSI PersistentVolume whose
// driver needs attach (no CSIDriver, or attachRequired not false), the
// VolumeAttachment the kubelet's CSI plugin reads on node (the pod's node,
// or --node): csi-sha256(volumeHandle+driver+node) (getAttachmentName,
// csi_attacher.go; getPublishContext, csi_plugin.go), unless the file has
// it. A NotFound one is left out: the volume is not attached, and the
// volumes step says so. (get volumeattachments)
func (c *Client) fetchVolumeAttachments(ctx context.Context, b *manifest.Bundle, r *Resolved, node string) error {
	if node == "" {
		return nil
	}
	pod := b.Pod
	for _, v := range pod.Spec.Volumes {
		name := volume.ClaimName(pod, v)
		if name == "" {
			continue
		}
		pvc, ok := b.PersistentVolumeClaim(pod.Namespace, name)
		if !ok {
			continue
		}
		pv, ok := b.PersistentVolume(pvc.Spec.VolumeName)
		if !ok || pv.Spec.CSI == nil {
			continue
		}
		if d, ok := b.CSIDriver(pv.Spec.CSI.Driver); ok && d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired {
			continue
		}
		vaName := csi.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, node)
		if _, ok := b.VolumeAttachment(vaName); ok {
			continue
		}
		got, err := kube.Get[storagev1.VolumeAttachment](ctx, c.API, kube.VolumeAttachments, "", vaName)
		err = c.classify(err, "get", "volumeattachments", "", vaName)
		f := Fetched{Kind: manifest.KindVolumeAttachment, Name: vaName, Why: "volume " + v.Name + " (PersistentVolume " + pv.Name + ")"}
		switch {
		case err == nil:
			if b.VolumeAttachments == nil {
				b.VolumeAttachments = map[string]*storagev1.VolumeAttachment{}
			}
			b.VolumeAttachments[vaName] = got
			b.Origins[manifest.OriginKey(manifest.KindVolumeAttachment, "", vaName)] = c.origin(got.ObjectMeta)
			f.Found, f.ResourceVersion = true, got.ResourceVersion
		case apierrors.IsNotFound(err):
		default:
			return err
		}
		r.Fetched = append(r.Fetched, f)
	}
	return nil
}
