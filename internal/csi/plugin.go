package csi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PluginName is the kubelet's CSI volume plugin; on disk "kubernetes.io~csi".
const PluginName = "kubernetes.io/csi"

// VolDataFile is the file the kubelet's CSI plugin keeps beside a volume's
// mount dir (and its staging dir) for teardown and reconstruction
// (volDataFileName, pkg/volume/csi/csi_plugin.go).
const VolDataFile = "vol_data.json"

// Keys of vol_data.json (volDataKey, pkg/volume/csi/csi_mounter.go).
const (
	keySpecVolID    = "specVolID"
	keyVolHandle    = "volumeHandle"
	keyDriverName   = "driverName"
	keyNodeName     = "nodeName"
	keyAttachmentID = "attachmentID"
	keyLifecycle    = "volumeLifecycleMode"
)

// The pod-info keys the kubelet adds to the volume context of a driver
// whose CSIDriver has podInfoOnMount (getPodInfoAttrs, csi_util.go).
const (
	PodNameKey        = "csi.storage.k8s.io/pod.name"
	PodNamespaceKey   = "csi.storage.k8s.io/pod.namespace"
	PodUIDKey         = "csi.storage.k8s.io/pod.uid"
	ServiceAccountKey = "csi.storage.k8s.io/serviceAccount.name"
	EphemeralKey      = "csi.storage.k8s.io/ephemeral"
)

// StagingPath is where the kubelet stages a CSI PersistentVolume:
// <root-dir>/plugins/kubernetes.io/csi/DRIVER/sha256(volumeHandle)/globalmount
// (makeDeviceMountPath, csi_attacher.go).
func StagingPath(rootDir, driver, handle string) string {
	return filepath.Join(rootDir, "plugins", PluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
}

// TargetPath is where the kubelet publishes a CSI volume for a pod:
// pods/UID/volumes/kubernetes.io~csi/NAME/mount, NAME the PV's name or the
// inline volume's (csiMountMgr.GetPath, csi_mounter.go).
func TargetPath(podDir, specName string) string {
	return filepath.Join(podDir, "volumes", "kubernetes.io~csi", specName, "mount")
}

// InlineHandle is the volume ID the kubelet gives an inline CSI volume:
// "csi-" + sha256(podUID + volume name) (makeVolumeHandle, csi_mounter.go).
func InlineHandle(podUID types.UID, volName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(podUID)+volName)))
}

// AttachmentName is the VolumeAttachment of a volume on a node:
// "csi-" + sha256(handle + driver + node) (getAttachmentName, csi_attacher.go).
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// PodInfo is the volume context the kubelet adds for a driver with
// podInfoOnMount (getPodInfoAttrs, csi_util.go).
func PodInfo(pod *corev1.Pod, inline bool) map[string]string {
	return map[string]string{
		PodNameKey:        pod.Name,
		PodNamespaceKey:   pod.Namespace,
		PodUIDKey:         string(pod.UID),
		ServiceAccountKey: pod.Spec.ServiceAccountName,
		EphemeralKey:      strconv.FormatBool(inline),
	}
}

// Volume is one CSI volume of a pod, with everything the kubelet's CSI
// plugin sends for it.
type Volume struct {
	// Driver is the CSI driver; Handle the volume ID (a PV's volumeHandle,
	// an inline volume's InlineHandle).
	Driver, Handle string
	// SpecName is the PV's name, or the inline volume's name.
	SpecName string
	// Inline is an inline (Ephemeral lifecycle) volume: never staged.
	Inline   bool
	ReadOnly bool
	FSType   string
	// AccessMode is the PV's first access mode (ReadWriteOnce for inline
	// volumes and PVs without one).
	AccessMode   corev1.PersistentVolumeAccessMode
	MountOptions []string
	// VolumeContext is the PV's volumeAttributes (the inline volume's),
	// with PodInfo merged in for a podInfoOnMount driver (and the tokens
	// of a CSIDriver's tokenRequests): NodePublishVolume's (SetUpAt).
	VolumeContext map[string]string
	// Attributes are the PV's volumeAttributes alone: NodeStageVolume's
	// volume context (csiAttacher.MountDevice sends csiSource.VolumeAttributes:
	// no pod info, no tokens; a stage is the volume's, not a pod's).
	Attributes     map[string]string
	PublishContext map[string]string
	// StageSecrets and PublishSecrets are the data of nodeStageSecretRef
	// and nodePublishSecretRef.
	StageSecrets, PublishSecrets map[string]string
	// FSGroup is the pod's fsGroup; FSGroupPolicy the CSIDriver's
	// (ReadWriteOnceWithFSType without a CSIDriver).
	FSGroup       *int64
	FSGroupPolicy storagev1.FSGroupPolicy
	// NodeName is the node's name, for vol_data.json.
	NodeName string
	// StagingPath (PVs) and TargetPath are the paths sent.
	StagingPath, TargetPath string
}

// State is what was done to a volume, for teardown and the step's details.
type State struct {
	// Staged: NodeStageVolume was sent and did not fail finally; teardown
	// unstages. StageSupported says the driver has STAGE_UNSTAGE_VOLUME.
	Staged, StageSupported bool
	// Published: NodePublishVolume was sent and did not fail finally;
	// teardown unpublishes.
	Published bool
	// MountGroup says the driver has VOLUME_MOUNT_GROUP: it applies the
	// fsGroup (sent as volume_mount_group); else KubeletFSGroup says the
	// kubelet applies it itself (SetVolumeOwnership) after publish.
	MountGroup, KubeletFSGroup bool
	// Notes say what happened, with the kubelet function for each.
	Notes []string
}

// MountDevice stages a PersistentVolume as the kubelet's
// csiAttacher.MountDevice (csi_attacher.go) does: NodeGetCapabilities
// (STAGE_UNSTAGE_VOLUME); without it nothing more (the staging dir is
// made, nothing sent); else NodeGetCapabilities (VOLUME_MOUNT_GROUP),
// vol_data.json beside the staging dir, and NodeStageVolume (whose
// csiDriverClient.NodeStageVolume asks NodeGetCapabilities for
// SINGLE_NODE_MULTI_WRITER first, to map the access mode).
func MountDevice(ctx context.Context, c *Client, v *Volume, st *State) error {
	return c.operation(ctx, func(ctx context.Context) error { return mountDevice(ctx, c, v, st) })
}

func mountDevice(ctx context.Context, c *Client, v *Volume, st *State) error {
	stage, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return err
	}
	st.StageSupported = stage
	if err := os.MkdirAll(v.StagingPath, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to create dir %q: %w", v.StagingPath, err)
	}
	if !stage {
		st.Notes = append(st.Notes, "no STAGE_UNSTAGE_VOLUME: MountDevice skipped (NodeStageVolume is not sent)")
		return nil
	}
	group, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %w", err)
	}
	data := map[string]string{keyVolHandle: v.Handle, keyDriverName: v.Driver}
	if err := saveVolData(filepath.Dir(v.StagingPath), data); err != nil {
		_ = removeMountDir(v.StagingPath)
		return err
	}
	mode, err := accessMode(ctx, c, v.AccessMode)
	if err != nil {
		return err
	}
	req := &csipb.NodeStageVolumeRequest{
		VolumeId: v.Handle, PublishContext: v.PublishContext, StagingTargetPath: v.StagingPath,
		VolumeCapability: capability(mode, v.FSType, v.MountOptions, fsGroupArg(group, v.FSGroup)),
		Secrets:          v.StageSecrets, VolumeContext: v.Attributes,
	}
	c.rec.Redactor.AddSecrets(Secrets(v.StageSecrets)...)
	err = c.Stage(ctx, req)
	st.Staged = err == nil || !Final(err)
	if err != nil && Final(err) {
		_ = removeMountDir(v.StagingPath)
	}
	return err
}

// SetUp publishes a volume as the kubelet's csiMountMgr.SetUpAt
// (csi_mounter.go) does: for a PV NodeGetCapabilities (STAGE_UNSTAGE_VOLUME,
// to send the staging path), the target's parent dir,
// NodeGetCapabilities (VOLUME_MOUNT_GROUP), vol_data.json beside the
// target, NodePublishVolume (after NodeGetCapabilities for
// SINGLE_NODE_MULTI_WRITER, csiDriverClient.NodePublishVolume); then, if the
// driver does not apply the fsGroup and the policy says the kubelet does
// (supportsFSGroup), st.KubeletFSGroup.
func SetUp(ctx context.Context, c *Client, v *Volume, st *State) error {
	return c.operation(ctx, func(ctx context.Context) error { return setUp(ctx, c, v, st) })
}

func setUp(ctx context.Context, c *Client, v *Volume, st *State) error {
	staging := ""
	if !v.Inline {
		stage, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: %w", err)
		}
		if stage {
			staging = v.StagingPath
		}
	}
	parent := filepath.Dir(v.TargetPath)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to create dir %q: %w", parent, err)
	}
	group, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %w", err)
	}
	st.MountGroup = group
	lifecycle := storagev1.VolumeLifecyclePersistent
	if v.Inline {
		lifecycle = storagev1.VolumeLifecycleEphemeral
	}
	data := map[string]string{
		keySpecVolID: v.SpecName, keyVolHandle: v.Handle, keyDriverName: v.Driver, keyNodeName: v.NodeName,
		keyLifecycle: string(lifecycle), keyAttachmentID: AttachmentName(v.Handle, v.Driver, v.NodeName),
	}
	if err := saveVolData(parent, data); err != nil {
		_ = removeMountDir(v.TargetPath)
		return err
	}
	mode, err := accessMode(ctx, c, v.AccessMode)
	if err != nil {
		return err
	}
	req := &csipb.NodePublishVolumeRequest{
		VolumeId: v.Handle, PublishContext: v.PublishContext, StagingTargetPath: staging, TargetPath: v.TargetPath,
		VolumeCapability: capability(mode, v.FSType, v.MountOptions, fsGroupArg(group, v.FSGroup)),
		Readonly:         v.ReadOnly, Secrets: v.PublishSecrets, VolumeContext: v.VolumeContext,
	}
	c.rec.Redactor.AddSecrets(Secrets(v.PublishSecrets)...)
	err = c.Publish(ctx, req)
	st.Published = err == nil || !Final(err)
	if err != nil {
		if Final(err) {
			_ = removeMountDir(v.TargetPath)
		}
		return err
	}
	st.KubeletFSGroup = !group && supportsFSGroup(v)
	return nil
}

// supportsFSGroup is csiMountMgr.supportsFSGroup (csi_mounter.go): whether
// the kubelet changes the volume's ownership to the fsGroup itself.
func supportsFSGroup(v *Volume) bool {
	if v.FSGroup == nil || v.FSGroupPolicy == storagev1.NoneFSGroupPolicy || v.ReadOnly {
		return false
	}
	if v.FSGroupPolicy == storagev1.FileFSGroupPolicy {
		return true
	}
	if v.FSType == "" {
		return false
	}
	if v.Inline {
		return true
	}
	return v.AccessMode == corev1.ReadWriteOnce
}

// TearDown unpublishes as csiMountMgr.TearDownAt (csi_mounter.go):
// NodeUnpublishVolume, then the target dir (if the driver left it, empty
// and unmounted), vol_data.json and their dir (removeMountDir, csi_util.go).
func TearDown(ctx context.Context, c *Client, handle, target string) error {
	return c.operation(ctx, func(ctx context.Context) error { return tearDown(ctx, c, handle, target) })
}

func tearDown(ctx context.Context, c *Client, handle, target string) error {
	if err := c.Unpublish(ctx, handle, target); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed: %w", err)
	}
	if err := removeMountDir(target); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to clean mount dir [%s]: %w", target, err)
	}
	return nil
}

// UnmountDevice unstages as csiAttacher.UnmountDevice (csi_attacher.go):
// NodeGetCapabilities (STAGE_UNSTAGE_VOLUME), NodeUnstageVolume when set,
// then the staging dir and vol_data.json.
func UnmountDevice(ctx context.Context, c *Client, handle, staging string) error {
	return c.operation(ctx, func(ctx context.Context) error { return unmountDevice(ctx, c, handle, staging) })
}

func unmountDevice(ctx context.Context, c *Client, handle, staging string) error {
	stage, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: %w", err)
	}
	if stage {
		if err := c.Unstage(ctx, handle, staging); err != nil {
			return fmt.Errorf("kubernetes.io/csi: attacher.UnmountDevice failed: %w", err)
		}
	}
	if err := removeMountDir(staging); err != nil {
		return fmt.Errorf("failed to clean up global mount %s: %w", filepath.Dir(staging), err)
	}
	return nil
}

// accessMode maps a Kubernetes access mode to CSI's as
// csiDriverClient.getNodeV1AccessModeMapper does: one NodeGetCapabilities
// for SINGLE_NODE_MULTI_WRITER, then asSingleNodeMultiWriterCapableCSIAccessModeV1
// or asCSIAccessModeV1 (csi_client.go).
func accessMode(ctx context.Context, c *Client, am corev1.PersistentVolumeAccessMode) (csipb.VolumeCapability_AccessMode_Mode, error) {
	snmw, err := c.Capabilities(ctx, csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	if err != nil {
		return csipb.VolumeCapability_AccessMode_UNKNOWN, err
	}
	switch am {
	case corev1.ReadWriteOnce:
		if snmw {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, nil
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	case corev1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, nil
	case corev1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, nil
	case corev1.ReadWriteOncePod:
		if snmw {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, nil
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN, nil
}

// fsGroupArg is the fsGroup sent to a driver with VOLUME_MOUNT_GROUP.
func fsGroupArg(group bool, fsGroup *int64) *int64 {
	if group {
		return fsGroup
	}
	return nil
}

// capability is the VolumeCapability the kubelet sends: a mount (fsType,
// the PV's mountOptions, volume_mount_group) or, for fsType "block", a
// block volume.
func capability(mode csipb.VolumeCapability_AccessMode_Mode, fsType string, opts []string, group *int64) *csipb.VolumeCapability {
	vc := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
	if fsType == "block" {
		vc.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return vc
	}
	mv := &csipb.VolumeCapability_MountVolume{FsType: fsType, MountFlags: opts}
	if group != nil {
		mv.VolumeMountGroup = strconv.FormatInt(*group, 10)
	}
	vc.AccessType = &csipb.VolumeCapability_Mount{Mount: mv}
	return vc
}

// saveVolData writes vol_data.json in dir as saveVolumeData (csi_util.go):
// the JSON object and a newline.
func saveVolData(dir string, data map[string]string) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, VolDataFile), append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("kubernetes.io/csi: failed to save volume data file %s: %w", filepath.Join(dir, VolDataFile), err)
	}
	return nil
}

// removeMountDir is removeMountDir (csi_util.go): the mount dir, if it is
// not a mount point (a driver that unpublished removes it itself), then
// vol_data.json and the volume's dir. A mount point left is an error:
// nothing is removed through it.
func removeMountDir(dir string) error {
	if mounted(dir) {
		return fmt.Errorf("%s is still mounted: the driver did not unmount it", dir)
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return err
	}
	vol := filepath.Dir(dir)
	if err := os.Remove(filepath.Join(vol, VolDataFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Remove(vol); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// mounted says whether dir is a mount point: its device differs from its
// parent's (the kubelet's IsLikelyNotMountPoint).
func mounted(dir string) bool {
	a, err := os.Stat(dir)
	if err != nil {
		return false
	}
	b, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return false
	}
	return devOf(a) != devOf(b)
}

// ErrNoDriver is a driver podstep has no endpoint for.
var ErrNoDriver = errors.New("driver not registered")
