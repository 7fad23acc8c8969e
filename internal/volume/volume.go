package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/csi"
)

// Plugin names, as the kubelet names them (kubernetes.io/<plugin>); on disk
// the "/" is escaped to "~" (utilstrings.EscapeQualifiedName).
const (
	PluginEmptyDir    = "kubernetes.io/empty-dir"
	PluginConfigMap   = "kubernetes.io/configmap"
	PluginSecret      = "kubernetes.io/secret"
	PluginDownwardAPI = "kubernetes.io/downward-api"
	PluginProjected   = "kubernetes.io/projected"
	PluginHostPath    = "kubernetes.io/host-path"
	PluginImage       = "kubernetes.io/image"
)

// Source resolves the ConfigMaps and Secrets a pod's volumes name, as the
// kubelet's configmap and secret managers do from the API server
// (*manifest.Bundle implements it).
type Source interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// Host is what the plugins need from the node (the kubelet's VolumeHost).
type Host struct {
	// Source resolves ConfigMaps and Secrets; nil means none exist.
	Source Source
	// Mount lets the plugins mount tmpfs (it needs root). When false, a
	// volume the kubelet puts on a tmpfs is a plain directory and the Result
	// says so in a warning (emptyDir medium Memory) or a note (secret,
	// downwardAPI, projected).
	Mount bool
	// NodeAllocatable is the node's allocatable resources
	// (VolumeHost.GetNodeAllocatable): its memory is the size of a tmpfs
	// when neither the pod nor the volume limits it, and its cpu, memory
	// and ephemeral-storage the downward API's limits of a container
	// without them. nil: no tmpfs size, no default limits.
	NodeAllocatable corev1.ResourceList
	// Now names the atomic writer's timestamped directories (nil = time.Now).
	Now func() time.Time
	// Tokens mints service-account tokens for serviceAccountToken
	// projections, as the kubelet's token manager does through the API
	// server's TokenRequest API (VolumeHost.GetServiceAccountTokenFunc, the
	// token.Manager of pkg/kubelet/token). nil: podstep has no API server,
	// and such a projection fails the volume with an *UnsupportedError.
	Tokens TokenSource
	// Claims resolves the PersistentVolumeClaims and PersistentVolumes of
	// persistentVolumeClaim and ephemeral volumes; nil means none exist.
	Claims ClaimSource
	// Owner is the UID the pod has in the API server, which a generic
	// ephemeral volume's claim must name as its controller ("" = the
	// pod's own UID).
	Owner types.UID
	// NodeName and NodeLabels are the node's, which a PersistentVolume's
	// node affinity is checked against.
	NodeName   string
	NodeLabels map[string]string
	// Simulated says the runtime is podstep's simulator: a local
	// PersistentVolume is used at its path, as a hostPath, not bind-mounted.
	Simulated bool
	// CSI are the node's CSI drivers (nil: none), CSIDrivers the CSIDriver
	// objects (nil: none), RootDir the kubelet's root dir, under which
	// CSI PersistentVolumes are staged.
	CSI         *csi.Drivers
	CSIDrivers  CSIDriverSource
	Attachments AttachmentSource
	RootDir     string
	// Placeholders says podstep has no API server: a serviceAccountToken
	// projection gets a labelled placeholder instead of a token, and a
	// missing kube-root-ca.crt ConfigMap a labelled placeholder ca.crt,
	// each with a warning (see PlaceholderToken). Without it, and without
	// Tokens, a token projection fails the volume.
	Placeholders bool
}

// TokenSource mints a token for the service account namespace/name with
// the request's audiences, expiry and bound object (the kubelet's
// token.Manager.GetServiceAccountToken, whose errors read "failed to fetch
// token: ..."). The token is a secret: an implementation tells podstep's
// redactor before it returns it.
type TokenSource interface {
	GetServiceAccountToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// Result says what a plugin made for one volume.
type Result struct {
	// Volume is the volume's name; Plugin the kubelet plugin that sets it up.
	Volume string `json:"volume"`
	Plugin string `json:"plugin"`
	// Path is the volume's host path, the HostPath of its container mounts.
	Path string `json:"path"`
	// Tmpfs is set when a tmpfs was mounted at Path; Size is its size=
	// option ("" = the kernel's default, half of RAM).
	Tmpfs bool   `json:"tmpfs,omitempty"`
	Size  string `json:"size,omitempty"`
	// Created is set for a hostPath volume whose path Setup created
	// (DirectoryOrCreate, FileOrCreate). The kubelet never removes it.
	Created bool `json:"created,omitempty"`
	// Entries lists what was written under Path (atomic-writer volumes).
	Entries []Entry `json:"entries,omitempty"`
	// Secret marks volumes whose file contents must not be shown.
	Secret bool `json:"secret,omitempty"`
	// CSI is set for a CSI volume: what its calls did, for teardown.
	CSI *CSIResult `json:"-"`
	// Device is set for a local PersistentVolume on a block device: where
	// its device was mounted before the pod's bind mount, for teardown.
	Device *DeviceMount `json:"-"`
	// Notes say how podstep's setup relates to the kubelet's.
	Notes []string `json:"notes,omitempty"`
	// Warnings are things a user should know (the kubelet would differ).
	Warnings []string `json:"warnings,omitempty"`
}

// Prepared is a volume whose setup was resolved and checked; Apply makes it.
type Prepared struct {
	host    *Host
	pod     *corev1.Pod
	vol     corev1.Volume
	dir     string
	plugin  string
	payload map[string]fileProjection // atomic-writer volumes
	medium  corev1.StorageMedium      // of the (wrapped) emptyDir
	size    int64                     // tmpfs size in bytes; 0 = no size option
	notes   []string
	claim   *Claim // persistentVolumeClaim and ephemeral volumes
	// localDevice is a local PV's block device, mounted by Apply before
	// the bind mount (on a real runtime).
	localDevice string
	csiVol      *csi.Volume // CSI volumes (inline, or a claim's CSI PV)
	// csiTokens are the CSIDriver's tokenRequests, minted by Apply.
	csiTokens          []storagev1.TokenRequest
	csiTokensInSecrets bool
	warns              []string
}

// PluginName returns the kubelet plugin that handles vol, or "" when
// podstep has none for it.
func PluginName(vol corev1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return PluginEmptyDir
	case vol.ConfigMap != nil:
		return PluginConfigMap
	case vol.Secret != nil:
		return PluginSecret
	case vol.DownwardAPI != nil:
		return PluginDownwardAPI
	case vol.Projected != nil:
		return PluginProjected
	case vol.HostPath != nil:
		return PluginHostPath
	case vol.Image != nil:
		return PluginImage
	case vol.CSI != nil:
		return PluginCSI
	}
	return ""
}

// Path returns where the kubelet puts vol for the pod whose dir is podDir
// (<root>/pods/<uid>): podDir/volumes/kubernetes.io~<plugin>/<name>, or the
// host path itself for hostPath. A volume podstep cannot set up gets
// podDir/volumes/kubernetes.io~<source field, lower case>/<name>.
func Path(podDir string, vol corev1.Volume) string {
	if vol.HostPath != nil {
		return vol.HostPath.Path
	}
	if vol.Image != nil {
		// The image plugin is a stub (pkg/volume/image/image.go): GetPath
		// is "", the runtime mounts the image itself.
		return ""
	}
	if vol.CSI != nil {
		// csiMountMgr.GetPath (csi_mounter.go): the driver mounts at
		// .../kubernetes.io~csi/<name>/mount, vol_data.json beside it.
		return csi.TargetPath(podDir, vol.Name)
	}
	plugin := PluginName(vol)
	if plugin == "" {
		plugin = "kubernetes.io/" + strings.ToLower(Kind(vol.VolumeSource))
	}
	return filepath.Join(podDir, "volumes", strings.ReplaceAll(plugin, "/", "~"), vol.Name)
}

// Kind names the volume source that is set by its API field name, such as
// "persistentVolumeClaim" ("unknown" when none is).
func Kind(src corev1.VolumeSource) string { return kindOf(src) }

// kindOf names the pointer field of the struct src that is set by its JSON
// name ("unknown" when none is).
func kindOf(src any) string {
	v := reflect.ValueOf(src)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
		}
	}
	return "unknown"
}

// Prepared's Claim is what a persistentVolumeClaim or ephemeral volume
// resolved to (nil for other volumes).
func (p *Prepared) Claim() *Claim { return p.claim }

// Setup prepares and applies vol at dir.
func (h *Host) Setup(ctx context.Context, pod *corev1.Pod, vol corev1.Volume, dir string) (Result, error) {
	p, err := h.Prepare(pod, vol, dir)
	if err != nil {
		return Result{Volume: vol.Name, Plugin: PluginName(vol), Path: dir}, err
	}
	return p.Apply(ctx)
}

// Prepare resolves what vol needs without writing anything: the objects and
// keys it names, downward API values, the hostPath type check (except that
// a missing *OrCreate path is created by Apply). The error is an *Error.
func (h *Host) Prepare(pod *corev1.Pod, vol corev1.Volume, dir string) (*Prepared, error) {
	p := &Prepared{host: h, pod: pod, vol: vol, dir: dir, plugin: PluginName(vol)}
	var err error
	switch {
	case vol.EmptyDir != nil:
		err = p.prepareEmptyDir()
	case vol.HostPath != nil:
		err = prepareHostPath(vol.HostPath)
	case vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil:
		err = p.preparePV()
	case vol.CSI != nil:
		err = p.prepareCSI(nil)
	case vol.ConfigMap != nil:
		p.payload, err = h.configMapPayload(pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.DefaultMode, vol.ConfigMap.Optional)
		p.notes = append(p.notes, "the kubelet keeps configMap volumes on disk, not on a tmpfs")
	case vol.Secret != nil:
		p.payload, err = h.secretPayload(pod.Namespace, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.DefaultMode, vol.Secret.Optional)
		p.wrapTmpfs()
	case vol.DownwardAPI != nil:
		p.payload, err = h.downwardAPIPayload(pod, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode)
		p.wrapTmpfs()
	case vol.Projected != nil:
		p.payload, err = h.projectedPayload(pod, vol.Projected)
		p.wrapTmpfs()
		p.warns = h.placeholderWarnings(pod, vol.Projected)
	case vol.Image != nil:
		// pkg/volume/image/image.go: SetUp does nothing; the kubelet pulls
		// the image before the first container starts (getImageVolumes)
		// and the runtime mounts it (CRI Mount.image).
		p.notes = append(p.notes, "the image plugin makes nothing on the node: the image is pulled before the first container starts, and the runtime mounts it read-only")
	default:
		err = unsupported(vol.VolumeSource)
	}
	if err == nil {
		// The atomic writer validates the paths before writing anything;
		// do it here so that a bad path fails before the dir is made.
		for path := range p.payload {
			if err = validatePayloadPath(path); err != nil {
				break
			}
		}
	}
	if err != nil {
		var ve *Error
		if errors.As(err, &ve) {
			return nil, ve
		}
		return nil, &Error{Volume: vol.Name, Err: err}
	}
	return p, nil
}

// Apply makes the volume on disk. The error is an *Error.
func (p *Prepared) Apply(ctx context.Context) (Result, error) {
	r := Result{Volume: p.vol.Name, Plugin: p.plugin, Path: p.dir, Notes: p.notes, Warnings: p.warns}
	if err := ctx.Err(); err != nil {
		return r, &Error{Volume: p.vol.Name, Err: err}
	}
	var err error
	switch {
	case p.vol.Image != nil:
		// nothing on disk (imagePlugin.SetUp)
	case p.csiVol != nil:
		err = p.applyCSI(ctx, &r)
	case p.claim != nil:
		err = p.applyPV(ctx, &r)
	case p.vol.HostPath != nil:
		r.Created, err = applyHostPath(p.vol.HostPath)
		if r.Created {
			r.Notes = append(r.Notes, "created "+p.dir+"; the kubelet never removes a hostPath, nor does podstep's teardown")
		}
	case p.vol.EmptyDir != nil:
		err = p.setupEmptyDir(&r)
		if err == nil {
			err = p.setOwnership(&r, false)
		}
	default:
		r.Secret = p.vol.Secret != nil || p.projectsSecret()
		if err = p.setupEmptyDir(&r); err != nil {
			break
		}
		var nested []string
		if nested, err = makeNestedMountpoints(p.vol.Name, p.dir, p.pod); err != nil {
			break
		}
		if len(nested) > 0 {
			r.Notes = append(r.Notes, "made the mount points of the volumes mounted beneath it, as the kubelet does before writing (MakeNestedMountpoints): "+strings.Join(nested, ", "))
		}
		ctxt := fmt.Sprintf("pod %s/%s volume %s", p.pod.Namespace, p.pod.Name, p.vol.Name)
		w := atomicWriter{dir: p.dir, context: ctxt, now: p.host.now}
		if err = w.write(p.payload); err != nil {
			break
		}
		if err = p.setOwnership(&r, true); err != nil {
			break
		}
		r.Entries, err = List(p.dir)
	}
	var ve *Error
	if errors.As(err, &ve) {
		return r, ve // a CSI volume's, with its operation
	}
	if err != nil {
		return r, &Error{Volume: p.vol.Name, Err: err}
	}
	return r, nil
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (p *Prepared) projectsSecret() bool {
	if p.vol.Projected == nil {
		return false
	}
	for _, s := range p.vol.Projected.Sources {
		if s.Secret != nil || s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}
