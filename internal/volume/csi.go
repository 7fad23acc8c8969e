package volume

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/podstep/podstep/internal/csi"
)

// CSIDriverSource resolves CSIDriver objects, as the kubelet's CSI plugin
// reads them through its CSIDriver lister (*manifest.Bundle implements it).
type CSIDriverSource interface {
	CSIDriver(name string) (*storagev1.CSIDriver, bool)
}

// AttachmentSource resolves VolumeAttachments, as the kubelet's CSI
// plugin GETs them (*manifest.Bundle implements it).
type AttachmentSource interface {
	VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool)
}

// CSIResult is what a CSI volume's setup did, for teardown: the driver,
// the volume ID, the paths sent, and whether it was staged and published
// (including calls that may have done their work: teardown undoes those
// too, as the kubelet undoes an uncertain mount).
type CSIResult struct {
	Driver, Handle          string
	StagingPath, TargetPath string
	State                   csi.State
}

// csiDriverObject looks a CSIDriver up.
func (h *Host) csiDriverObject(name string) (*storagev1.CSIDriver, bool) {
	if h.CSIDrivers == nil {
		return nil, false
	}
	return h.CSIDrivers.CSIDriver(name)
}

// prepareCSI resolves a CSI volume (inline when pv is nil) without sending
// anything, in the order of the kubelet's checks: the driver registered
// (newCsiDriverClient / csiClientGetter.Get), the CSIDriver's lifecycle
// modes (supportsVolumeLifecycleMode), its fsGroupPolicy (getFSGroupPolicy),
// for a PV whether it must be attached (CanAttach → skipAttach: no
// CSIDriver, or attachRequired not false), the secrets the refs name
// (getCredentialsFromSecret) and the pod-info keys (podInfoEnabled).
func (p *Prepared) prepareCSI(pv *corev1.PersistentVolume) error {
	h := p.host
	v := &csi.Volume{NodeName: h.NodeName, AccessMode: corev1.ReadWriteOnce, TargetPath: p.dir}
	var stageRef, publishRef *corev1.SecretReference
	if pv == nil {
		src := p.vol.CSI
		v.Driver, v.SpecName, v.Inline = src.Driver, p.vol.Name, true
		v.Handle = csi.InlineHandle(p.pod.UID, p.vol.Name)
		if src.ReadOnly != nil {
			v.ReadOnly = *src.ReadOnly
		}
		if src.FSType != nil {
			v.FSType = *src.FSType
		}
		v.VolumeContext = src.VolumeAttributes
		if src.NodePublishSecretRef != nil {
			publishRef = &corev1.SecretReference{Name: src.NodePublishSecretRef.Name, Namespace: p.pod.Namespace}
		}
	} else {
		src := pv.Spec.CSI
		v.Driver, v.SpecName, v.Handle = src.Driver, pv.Name, src.VolumeHandle
		v.ReadOnly = p.claim.ReadOnly
		v.FSType = src.FSType
		if len(pv.Spec.AccessModes) > 0 {
			v.AccessMode = pv.Spec.AccessModes[0]
		}
		v.MountOptions = pv.Spec.MountOptions
		v.VolumeContext, v.Attributes = src.VolumeAttributes, src.VolumeAttributes
		stageRef, publishRef = src.NodeStageSecretRef, src.NodePublishSecretRef
		v.StagingPath = csi.StagingPath(h.RootDir, v.Driver, v.Handle)
		if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
			return &UnsupportedError{Kind: "csi", Need: fmt.Sprintf("PersistentVolume %s has volumeMode Block: the kubelet maps a raw block CSI volume with csiBlockMapper (csi_block.go); podstep does not map block volumes yet", pv.Name),
				Fix: "use a Filesystem PersistentVolume in volumeMounts, or run this pod on a real node"}
		}
	}
	p.plugin = PluginCSI
	_, how, ok := h.CSI.Endpoint(v.Driver)
	if !ok {
		return csiError(p.vol.Name, v.Driver, pv != nil, h.CSI.NotFoundHint(v.Driver))
	}
	p.notes = append(p.notes, fmt.Sprintf("CSI driver %s: node socket %s", v.Driver, how))
	obj, found := h.csiDriverObject(v.Driver)
	lifecycle := storagev1.VolumeLifecyclePersistent
	if v.Inline {
		lifecycle = storagev1.VolumeLifecycleEphemeral
	}
	modeErr := func(msg string, fix string) error {
		return &Error{Volume: p.vol.Name, Err: &ClaimError{Msg: "kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: " + msg, Fix: fix}}
	}
	switch {
	case !found && v.Inline:
		return modeErr(fmt.Sprintf("volume mode %q not supported by driver %s (no CSIDriver object)", lifecycle, v.Driver),
			fmt.Sprintf("an inline CSI volume needs a CSIDriver %s whose spec.volumeLifecycleModes lists Ephemeral: add it to the manifest (apiVersion: storage.k8s.io/v1, kind: CSIDriver), or read it from the API server with --kubeconfig", v.Driver))
	case found && !slices.Contains(obj.Spec.VolumeLifecycleModes, lifecycle):
		return modeErr(fmt.Sprintf("volume mode %q not supported by driver %s (only supports %q)", lifecycle, v.Driver, obj.Spec.VolumeLifecycleModes),
			fmt.Sprintf("CSIDriver %s's spec.volumeLifecycleModes does not list %s: the driver does not serve this kind of volume", v.Driver, lifecycle))
	}
	v.FSGroupPolicy = storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if found && obj.Spec.FSGroupPolicy != nil {
		v.FSGroupPolicy = *obj.Spec.FSGroupPolicy
	}
	if !v.Inline {
		skip := found && obj.Spec.AttachRequired != nil && !*obj.Spec.AttachRequired
		if !skip {
			why := "no CSIDriver " + v.Driver + " (without one the kubelet assumes attach is required)"
			if found {
				why = "CSIDriver " + v.Driver + " has attachRequired: true"
			}
			name := csi.AttachmentName(v.Handle, v.Driver, h.NodeName)
			var va *storagev1.VolumeAttachment
			ok := false
			if h.Attachments != nil {
				va, ok = h.Attachments.VolumeAttachment(name)
			}
			switch {
			case ok && va.Status.Attached:
				// getPublishContext (csi_plugin.go): the attacher's
				// attachmentMetadata is the publish context.
				v.PublishContext = va.Status.AttachmentMetadata
				p.notes = append(p.notes, fmt.Sprintf("%s: attached by VolumeAttachment %s; its status.attachmentMetadata is sent as publish_context (getPublishContext)", why, name))
			case ok:
				return &Error{Volume: p.vol.Name, Op: "MountVolume.WaitForAttach failed", Err: &ClaimError{
					Msg: fmt.Sprintf("volume %s is not attached: VolumeAttachment %s has status.attached false; the kubelet waits for the attach/detach controller before MountDevice", pv.Name, name),
					Fix: fmt.Sprintf("give VolumeAttachment %s status.attached: true (and the attacher's status.attachmentMetadata), or a CSIDriver %s with spec.attachRequired: false", name, v.Driver)}}
			default:
				return &Error{Volume: p.vol.Name, Op: "MountVolume.WaitForAttach failed", Err: &ClaimError{
					Msg: fmt.Sprintf("volume %s is not attached: %s; the kubelet waits until the attach/detach controller has attached it (VolumeAttachment %s, node.status.volumesAttached) before MountDevice", pv.Name, why, name),
					Fix: fmt.Sprintf("podstep has no attach/detach controller: add VolumeAttachment %s (spec: {attacher: %s, nodeName: %s, source: {persistentVolumeName: %s}}, status: {attached: true, attachmentMetadata: ...}) to the manifest, or use a driver that needs no attach (a CSIDriver %s with spec.attachRequired: false)", name, v.Driver, h.NodeName, pv.Name, v.Driver)}}
			}
		}
	}
	var err error
	if v.StageSecrets, err = p.csiSecret(stageRef, "NodeStageSecretRef"); err != nil {
		return err
	}
	if v.PublishSecrets, err = p.csiSecret(publishRef, "NodePublishSecretRef"); err != nil {
		return err
	}
	if found && obj.Spec.PodInfoOnMount != nil && *obj.Spec.PodInfoOnMount {
		ctx := map[string]string{}
		for k, val := range v.VolumeContext {
			ctx[k] = val
		}
		for k, val := range csi.PodInfo(p.pod, v.Inline) {
			ctx[k] = val
		}
		v.VolumeContext = ctx
		p.notes = append(p.notes, "CSIDriver "+v.Driver+" has podInfoOnMount: the pod's name, namespace, uid, service account and csi.storage.k8s.io/ephemeral are added to the volume context (getPodInfoAttrs)")
	}
	if found && len(obj.Spec.TokenRequests) > 0 {
		if h.Tokens == nil && !h.Placeholders {
			return &UnsupportedError{Kind: "csi", Need: fmt.Sprintf("CSIDriver %s has tokenRequests: the kubelet mints a service-account token per audience with the API server's TokenRequest API for NodePublishVolume (podServiceAccountTokenAttrs), and podstep has no API server to mint them", v.Driver),
				Fix: "run with --kubeconfig (or --pod) to mint them"}
		}
		p.csiTokens = obj.Spec.TokenRequests
		p.csiTokensInSecrets = obj.Spec.ServiceAccountTokenInSecrets != nil && *obj.Spec.ServiceAccountTokenInSecrets
	}
	if sc := p.pod.Spec.SecurityContext; sc != nil {
		v.FSGroup = sc.FSGroup
	}
	p.csiVol = v
	return nil
}

// csiSecret reads a secret ref's data as getCredentialsFromSecret does
// (every key, its value as a string).
func (p *Prepared) csiSecret(ref *corev1.SecretReference, field string) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	var s *corev1.Secret
	ok := false
	if p.host.Source != nil {
		s, ok = p.host.Source.Secret(ref.Namespace, ref.Name)
	}
	if !ok {
		return nil, &Error{Volume: p.vol.Name, Err: &ClaimError{
			Msg: fmt.Sprintf("fetching %s %s/%s failed: secrets %q not found", field, ref.Namespace, ref.Name, ref.Name),
			Fix: fmt.Sprintf("add Secret %s/%s to the manifest, or read it from the API server with --kubeconfig", ref.Namespace, ref.Name)}}
	}
	out := map[string]string{}
	for k, b := range s.Data {
		out[k] = string(b)
	}
	return out, nil
}

// applyCSI sends the volume's calls: for a PV MountDevice (stage) then
// SetUp (publish), for an inline volume SetUp alone, as the operation
// generator does (GenerateMountVolumeFunc: deviceMounter.MountDevice, then
// volumeMounter.SetUp). r.CSI says what to undo, even on error.
func (p *Prepared) applyCSI(ctx context.Context, r *Result) error {
	v := p.csiVol
	c, err := p.host.CSI.Client(v.Driver)
	if err != nil {
		return csiError(p.vol.Name, v.Driver, !v.Inline, p.host.CSI.NotFoundHint(v.Driver))
	}
	r.CSI = &CSIResult{Driver: v.Driver, Handle: v.Handle, StagingPath: v.StagingPath, TargetPath: v.TargetPath}
	if !v.Inline {
		if err := csi.MountDevice(ctx, c, v, &r.CSI.State); err != nil {
			return &Error{Volume: p.vol.Name, Op: "MountVolume.MountDevice failed", Err: err}
		}
		if r.CSI.State.Staged {
			r.Notes = append(r.Notes, "staged at "+v.StagingPath+" (csiAttacher.MountDevice, csi_attacher.go)")
		}
	}
	if len(p.csiTokens) > 0 {
		if err := p.addCSITokens(v, r); err != nil {
			return &Error{Volume: p.vol.Name, Err: fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: %w", err)}
		}
	}
	if err := csi.SetUp(ctx, c, v, &r.CSI.State); err != nil {
		return &Error{Volume: p.vol.Name, Err: err}
	}
	r.Notes = append(r.Notes, r.CSI.State.Notes...)
	r.Notes = append(r.Notes, "published at "+v.TargetPath+" (csiMountMgr.SetUpAt, csi_mounter.go); NodeUnpublishVolume at teardown")
	switch {
	case v.FSGroup != nil && r.CSI.State.MountGroup:
		r.Notes = append(r.Notes, fmt.Sprintf("fsGroup %d sent as volume_mount_group: the driver has VOLUME_MOUNT_GROUP and applies it", *v.FSGroup))
	case r.CSI.State.KubeletFSGroup:
		return p.setOwnership(r, false)
	case v.FSGroup != nil:
		r.Notes = append(r.Notes, fmt.Sprintf("fsGroup %d not applied: fsGroupPolicy %s (supportsFSGroup)", *v.FSGroup, v.FSGroupPolicy))
	}
	return nil
}

// UnpublishCSI undoes r's publish as the kubelet's reconciler does once
// the pod's containers are gone (unmountVolumes → csiMountMgr.TearDownAt:
// NodeUnpublishVolume). drivers must be the ones that set it up.
func UnpublishCSI(ctx context.Context, drivers *csi.Drivers, r *CSIResult) error {
	if !r.State.Published {
		return nil
	}
	c, err := drivers.Client(r.Driver)
	if err != nil {
		return err
	}
	if err := csi.TearDown(ctx, c, r.Handle, r.TargetPath); err != nil {
		return err
	}
	r.State.Published = false
	return nil
}

// RemoveUnstagedDir removes the empty staging dir MountDevice made for a
// driver without STAGE_UNSTAGE_VOLUME (and its sha256 dir): the kubelet's
// UnmountDevice finds no vol_data.json there and returns at once, leaving
// it; podstep removes what its run made. Non-empty dirs are left.
func RemoveUnstagedDir(r *CSIResult) {
	if r.StagingPath == "" || r.State.Staged || r.State.StageSupported {
		return
	}
	if os.Remove(r.StagingPath) == nil {
		_ = os.Remove(filepath.Dir(r.StagingPath))
	}
}

// UnstageCSI undoes r's stage, after every publish of it is undone, as
// the reconciler's unmountDetachDevices does (csiAttacher.UnmountDevice:
// NodeGetCapabilities, NodeUnstageVolume).
func UnstageCSI(ctx context.Context, drivers *csi.Drivers, r *CSIResult) error {
	if !r.State.Staged || r.State.Published {
		return nil
	}
	c, err := drivers.Client(r.Driver)
	if err != nil {
		return err
	}
	if err := csi.UnmountDevice(ctx, c, r.Handle, r.StagingPath); err != nil {
		return err
	}
	r.State.Staged = false
	return nil
}

// TokensKey is the volume context (or secrets) key of the tokens the
// kubelet mints for a CSIDriver with tokenRequests.
const TokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// addCSITokens mirrors csiMountMgr.podServiceAccountTokenAttrs
// (csi_mounter.go): a TokenRequest per CSIDriver tokenRequest (its
// audience, none for "", its expirationSeconds, bound to the pod) for the
// pod's service account, their statuses as JSON by audience under
// TokensKey, in the volume context, or in the publish secrets when the
// CSIDriver has serviceAccountTokenInSecrets. Without an API server the
// token is PlaceholderToken, with its warning. Every token is a secret
// (the TokenSource tells the redactor).
func (p *Prepared) addCSITokens(v *csi.Volume, r *Result) error {
	out := map[string]authenticationv1.TokenRequestStatus{}
	for _, tr := range p.csiTokens {
		auds := []string{tr.Audience}
		if tr.Audience == "" {
			auds = []string{}
		}
		if p.host.Tokens == nil {
			out[tr.Audience] = authenticationv1.TokenRequestStatus{Token: PlaceholderToken}
			if !slices.Contains(r.Warnings, WarnPlaceholderToken) {
				r.Warnings = append(r.Warnings, WarnPlaceholderToken)
			}
			continue
		}
		got, err := p.host.Tokens.GetServiceAccountToken(p.pod.Namespace, p.pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: auds, ExpirationSeconds: tr.ExpirationSeconds,
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: p.pod.Name, UID: p.pod.UID}},
		})
		if err != nil {
			return err
		}
		out[tr.Audience] = got.Status
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	target := &v.VolumeContext
	where := "volume context"
	if p.csiTokensInSecrets {
		target, where = &v.PublishSecrets, "publish secrets (serviceAccountTokenInSecrets)"
	}
	m := map[string]string{}
	for k, val := range *target {
		m[k] = val
	}
	m[TokensKey] = string(b)
	*target = m
	r.Notes = append(r.Notes, fmt.Sprintf("%d service-account token(s) for the CSIDriver's tokenRequests in the %s under %s (podServiceAccountTokenAttrs); values redacted", len(out), where, TokensKey))
	return nil
}
