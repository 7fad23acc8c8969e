package volume

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/reason"
)

// Error is a volume that could not be set up. Its text is the kubelet's
// FailedMount event message, from operation_generator.go
// GenerateMountVolumeFunc → volumeToMount.GenerateError("MountVolume.SetUp
// failed", err): `MountVolume.SetUp failed for volume "x" : <err>`.
type Error struct {
	Volume string
	Err    error
	// Op is the kubelet's prefix, "MountVolume.SetUp failed" when empty
	// ("MountVolume.NodeAffinity check failed", "MountVolume.MountDevice
	// failed"). An error of the desired-state populator (a claim it cannot
	// use) has none: the kubelet reports its text as is.
	Op string
}

func (e *Error) Error() string {
	var pe *populatorError
	if errors.As(e.Err, &pe) {
		return pe.Error()
	}
	op := e.Op
	if op == "" {
		op = "MountVolume.SetUp failed"
	}
	return fmt.Sprintf("%s for volume %q : %v", op, e.Volume, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is the event reason, FailedMount (reason.FailedMountVolume).
func (e *Error) Reason() string { return reason.FailedMountVolume }

// NotFoundError is a ConfigMap or Secret that does not exist, worded as the
// kubelet's cache-based managers word it (apierrors.NewNotFound with the
// group resource "configmap" / "secret"): `configmap "x" not found`.
type NotFoundError struct {
	Resource string // "configmap" or "secret"
	Name     string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.Resource, e.Name) }

// MissingKeyError is an item naming a key its non-optional object lacks
// (configmap.MakePayload / secret.MakePayload).
type MissingKeyError struct {
	Resource string // "configmap" or "secret"
	Key      string
}

func (e *MissingKeyError) Error() string {
	if e.Resource == "configmap" {
		return "configmap references non-existent config key: " + e.Key
	}
	return "references non-existent secret key: " + e.Key
}

// HostPathError is a failed hostPath type check (hostpath/host_path.go
// checkType, typeMatchedOrError) or an invalid hostPath.
type HostPathError struct {
	Path string
	Msg  string // the kubelet's text
	Err  error  // the underlying error, if any
}

func (e *HostPathError) Error() string { return e.Msg }
func (e *HostPathError) Unwrap() error { return e.Err }

// UnsupportedError is a volume (or projected source) podstep cannot set up:
// Kind is its API field name, Need says what it would take.
type UnsupportedError struct {
	Kind string
	Need string
	// Fix says what to change, when there is a way forward.
	Fix string
}

func (e *UnsupportedError) Error() string { return e.Need }

// Hint says what to change ("" when nothing would do).
func (e *UnsupportedError) Hint() string { return e.Fix }

// ErrUnsupported matches every *UnsupportedError with errors.Is.
var ErrUnsupported = errors.New("volume type not supported by podstep")

func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// needs says, per volume source, what podstep lacks to set it up.
var needs = map[string]string{
	"nfs":                  "an NFS volume needs the NFS client (mount.nfs) and a reachable NFS server; podstep does not mount network filesystems",
	"iscsi":                "an iSCSI volume needs iscsiadm, an iSCSI target and a filesystem on the LUN; podstep does not attach block devices",
	"rbd":                  "an RBD volume needs a Ceph cluster and the rbd kernel module; podstep does not attach block devices",
	"cephfs":               "a CephFS volume needs a Ceph cluster and mount.ceph; podstep does not mount network filesystems",
	"glusterfs":            "a GlusterFS volume needs a Gluster cluster (the in-tree plugin was removed in Kubernetes 1.26); podstep does not mount network filesystems",
	"fc":                   "a Fibre Channel volume needs an FC HBA and a target LUN; podstep does not attach block devices",
	"flexVolume":           "a FlexVolume needs its driver binary under the kubelet's volume plugin dir; podstep runs no volume drivers",
	"gitRepo":              "a gitRepo volume needs the kubelet's deprecated git-repo plugin (git clone into an emptyDir); use an emptyDir and an init container instead",
	"awsElasticBlockStore": "an AWS EBS volume needs a cloud attach (CSI migration to ebs.csi.aws.com); podstep has no cloud provider",
	"gcePersistentDisk":    "a GCE PD volume needs a cloud attach (CSI migration to pd.csi.storage.gke.io); podstep has no cloud provider",
	"azureDisk":            "an Azure Disk volume needs a cloud attach (CSI migration to disk.csi.azure.com); podstep has no cloud provider",
	"azureFile":            "an Azure File volume needs the Azure File CSI driver and a storage account; podstep has no cloud provider",
	"cinder":               "a Cinder volume needs OpenStack (CSI migration to cinder.csi.openstack.org); podstep has no cloud provider",
	"vsphereVolume":        "a vSphere volume needs vCenter (CSI migration to csi.vsphere.vmware.com); podstep has no cloud provider",
	"portworxVolume":       "a Portworx volume needs the Portworx driver; podstep has no volume drivers",
	"flocker":              "a Flocker volume needs the Flocker control service (the plugin was removed); podstep has no volume drivers",
	"quobyte":              "a Quobyte volume needs the Quobyte client (the plugin was removed); podstep has no volume drivers",
	"scaleIO":              "a ScaleIO volume needs the ScaleIO SDC (the plugin was removed); podstep has no volume drivers",
	"storageos":            "a StorageOS volume needs the StorageOS driver (the plugin was removed); podstep has no volume drivers",
	"photonPersistentDisk": "a Photon PD volume needs Photon Controller (the plugin was removed); podstep has no volume drivers",
}

func unsupported(src corev1.VolumeSource) error {
	return unsupportedKind(Kind(src))
}

// unsupportedKind is unsupported for a source named by its API field.
func unsupportedKind(kind string) error {
	need, ok := needs[kind]
	if !ok {
		need = fmt.Sprintf("podstep cannot set up %s volumes", kind)
	}
	return &UnsupportedError{Kind: kind, Need: need}
}

// errTokenProjection is a projected serviceAccountToken source.
func errTokenProjection(sa string) error {
	if sa == "" {
		sa = "default"
	}
	return &UnsupportedError{Kind: "serviceAccountToken", Need: fmt.Sprintf(
		"no token for service account %q: a serviceAccountToken projection needs the API server's TokenRequest API (the kubelet's token manager asks it), and this run has none", sa),
		Fix: "run with --kubeconfig (or run --pod) to mint the token through the API server, as the kubelet does; without an API server podstep writes a labelled placeholder token"}
}

// errClusterTrustBundle is a projected clusterTrustBundle source.
func errUnsupportedProjection(kind string) error {
	return &UnsupportedError{Kind: kind, Need: fmt.Sprintf(
		"podstep cannot project %s: it needs objects from the API server that a manifest cannot hold", kind)}
}
