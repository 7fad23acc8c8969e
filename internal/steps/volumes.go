package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/volume"
)

// volumesStep mirrors volumeManager.WaitForAttachAndMount
// (pkg/kubelet/volumemanager/volume_manager.go): SyncPod blocks until every
// volume the pod names is set up by its plugin under
// pods/<uid>/volumes/kubernetes.io~<plugin>/<name>.
type volumesStep struct{}

func (volumesStep) mirrors() string {
	return "Kubelet.SyncPod → volumeManager.WaitForAttachAndMount (pkg/kubelet/volumemanager/volume_manager.go)"
}

func (volumesStep) explain() string {
	return "The kubelet waits until its volume manager has attached and mounted every volume of the pod. Each plugin makes its volume under pods/<uid>/volumes/kubernetes.io~<plugin>/<name>: an emptyDir is a 0777 directory (a tmpfs for medium Memory); configMap, secret, downwardAPI and projected volumes are written by the atomic writer (a timestamped ..<date> directory, the ..data symlink to it, and one symlink per top-level file), secret, downwardAPI and projected on a tmpfs; a hostPath is checked against its type (and created for DirectoryOrCreate / FileOrCreate). A persistentVolumeClaim (or a generic ephemeral volume's claim POD-VOLUME, which the pod must own) is first resolved by the desired-state populator (createVolumeSpec → getPVCExtractPV, getPVSpec in pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go): the claim must be Bound, not being deleted, with a volumeName, the PersistentVolume's claimRef uid the claim's, its volumeMode Filesystem for volumeMounts and Block for volumeDevices; then the operation generator checks the PV's node affinity against the node's labels (checkNodeAffinity, pkg/volume/util/operationexecutor/operation_generator.go) and the PV's plugin sets it up: hostPath as above, local as a bind mount under pods/<uid>/volumes/kubernetes.io~local-volume/<pv>, CSI through the driver's node plugin. Each volume is set up by operation_generator.go GenerateMountVolumeFunc → <plugin>.SetUp (pkg/volume/...); a volume that cannot be set up is a FailedMount event, and the pod waits in ContainerCreating. Containers get these directories as bind mounts later."
}

func (volumesStep) requests(*Engine) []Request { return nil }

func (volumesStep) run(ctx context.Context, e *Engine) Result {
	if len(e.pod.Spec.Volumes) == 0 {
		return ok("the pod has no volumes")
	}
	vols, skipped := usedVolumes(e.pod)
	if len(vols) == 0 {
		return ok(fmt.Sprintf("no container uses the pod's %s", plural(len(skipped), "volume", "volumes")), skipped...)
	}
	host := e.volumeHost()
	pod := e.volumePod()
	planned := e.plannedVolumePaths()

	// Phase 1: resolve and check every volume, writing nothing, so that a
	// pod whose volumes cannot all be set up gets none of them.
	prepared := make([]*volume.Prepared, len(vols))
	var failed []string
	var firstErr error
	var details []Detail
	for i, v := range vols {
		p, err := host.Prepare(pod, v, planned[v.Name])
		if err != nil {
			e.tracker.Record(corev1.EventTypeWarning, reason.FailedMountVolume, "", err.Error())
			failed = append(failed, v.Name)
			details = append(details, kv(v.Name, err.Error()))
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		prepared[i] = p
	}
	if firstErr != nil {
		return volumesFailed(e, failed, firstErr, details, nil)
	}

	// Phase 2: make them, in spec order (the kubelet mounts them in parallel).
	paths := map[string]string{}
	var warnings []string
	var made []string
	for i, v := range vols {
		r, err := prepared[i].Apply(ctx)
		if r.Created {
			made = append(made, r.Path)
		}
		if r.CSI != nil || r.Device != nil {
			e.mu.Lock()
			if r.CSI != nil {
				e.rt.csiVolumes = append(e.rt.csiVolumes, r.CSI)
			}
			if r.Device != nil {
				e.rt.deviceMounts = append(e.rt.deviceMounts, r.Device)
			}
			e.mu.Unlock()
		}
		if err != nil {
			e.tracker.Record(corev1.EventTypeWarning, reason.FailedMountVolume, "", err.Error())
			details = append(details, kv(v.Name, err.Error()))
			return volumesFailed(e, []string{v.Name}, err, details, made)
		}
		paths[v.Name] = r.Path
		details = append(details, volumeDetails(v, r)...)
		details = append(details, e.claimDetails(v, prepared[i].Claim())...)
		details = append(details, e.volumeOrigins(v)...)
		for _, w := range r.Warnings {
			if !slices.Contains(warnings, w) { // once per run, not per volume
				warnings = append(warnings, w)
			}
		}
	}
	e.rt.volumePaths = paths
	res := ok(fmt.Sprintf("%d volume(s) ready", len(paths)), append(details, skipped...)...)
	res.Warnings = warnings
	return res
}

// usedVolumes splits the pod's volumes into those a container (init and
// ephemeral ones too) mounts or uses as a device, in spec order, and one
// detail per volume none uses: the kubelet's desired-state populator skips
// those ("Skipping unused volume": processPodVolumes with
// volumeutil.GetPodVolumeNames, pkg/kubelet/volumemanager/populator/
// desired_state_of_world_populator.go), so they are never set up and a
// missing Secret or ConfigMap behind one fails nothing.
func usedVolumes(pod *corev1.Pod) ([]corev1.Volume, []Detail) {
	used := map[string]bool{}
	visit := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) {
		for _, m := range mounts {
			used[m.Name] = true
		}
		for _, d := range devices {
			used[d.Name] = true
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
	var vols []corev1.Volume
	var skipped []Detail
	for _, v := range pod.Spec.Volumes {
		if used[v.Name] {
			vols = append(vols, v)
			continue
		}
		skipped = append(skipped, kv(v.Name, "not set up: no container mounts it (the kubelet's volume manager skips an unused volume)"))
	}
	return vols, skipped
}

// volumesFailed is the step's failure: the kubelet's SyncPod error after
// WaitForAttachAndMount gives up is "unmounted volumes=[...]: ...", each
// volume's own error is its FailedMount event.
func volumesFailed(e *Engine, failed []string, err error, details []Detail, createdHostPaths []string) Result {
	for _, p := range createdHostPaths {
		details = append(details, kv("left on the host", p+" (a hostPath the kubelet created; it never removes one, and neither does podstep's teardown)"))
	}
	summary := fmt.Sprintf("unmounted volumes=[%s]", strings.Join(failed, " "))
	var ue *volume.UnsupportedError
	if errors.As(err, &ue) {
		summary += ": podstep cannot set up " + ue.Kind
	}
	if h := volume.Hint(err); h != "" {
		details = append(details, kv("to go on", h))
	}
	r := fail(reason.FailedMountVolume, err, summary)
	r.Details = details
	return r
}

// volumeHost is the node as the volume plugins see it.
func (e *Engine) volumeHost() *volume.Host {
	var src volume.Source
	if e.bundle != nil {
		src = e.bundle
	}
	h := &volume.Host{
		Source:          src,
		Mount:           os.Geteuid() == 0,
		NodeAllocatable: e.opts.Node.Object.Status.Allocatable,
		Now:             e.now,
		NodeName:        e.opts.Node.Name(),
		NodeLabels:      e.opts.Node.Object.Labels,
		Simulated:       e.opts.Simulated,
		Owner:           types.UID(e.opts.Config.ExtraLabels[replayOfLabel]),
	}
	if e.bundle != nil {
		h.Claims = e.bundle
		h.CSIDrivers = e.bundle
		h.Attachments = e.bundle
	}
	h.CSI = e.opts.CSI
	h.RootDir = e.opts.Config.RootDir
	if e.opts.Tokens != nil {
		h.Tokens = redactedTokens{src: e.opts.Tokens, red: e.redactor}
	} else {
		// No API server (-f without --kubeconfig): labelled placeholders
		// for the token and a missing kube-root-ca.crt, with a warning.
		h.Placeholders = true
	}
	return h
}

// replayOfLabel is cluster.ReplayLabel: the sandbox label of a cluster
// pod podstep replays under its own UID, whose value is the pod's UID in
// the API server (the owner a generic ephemeral volume's claim names).
const replayOfLabel = "podstep.dev/replay-of"

// redactedTokens hands every token to the redactor before the volume
// plugin gets it, so that no output, recording or trace shows it.
type redactedTokens struct {
	src volume.TokenSource
	red *cri.Redactor
}

func (r redactedTokens) GetServiceAccountToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	out, err := r.src.GetServiceAccountToken(namespace, name, tr)
	if err != nil {
		return nil, err
	}
	r.red.AddSecrets(out.Status.Token)
	return out, nil
}

// volumeOrigins says where each object a volume projects came from (the
// manifest, or the API server with its resourceVersion), one detail per
// object, and which service account a token is minted for.
func (e *Engine) volumeOrigins(v corev1.Volume) []Detail {
	ns := e.pod.Namespace
	var out []Detail
	add := func(kind, name string) {
		if o := e.bundle.Origin(kind, ns, name); o != "" {
			out = append(out, kv(v.Name+" "+strings.ToLower(kind)+" "+name, "from "+o))
		}
	}
	switch {
	case v.ConfigMap != nil:
		add(manifest.KindConfigMap, v.ConfigMap.Name)
	case v.Secret != nil:
		add(manifest.KindSecret, v.Secret.SecretName)
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				add(manifest.KindConfigMap, s.ConfigMap.Name)
			case s.Secret != nil:
				add(manifest.KindSecret, s.Secret.Name)
			case s.ServiceAccountToken != nil && e.opts.Tokens == nil:
				out = append(out, kv(v.Name+" token "+s.ServiceAccountToken.Path, "placeholder (no API server to mint a token; not a valid JWT): run with --kubeconfig for a real one"))
			case s.ServiceAccountToken != nil:
				sa := e.pod.Spec.ServiceAccountName
				if sa == "" {
					sa = "default"
				}
				aud := "the API server's"
				if s.ServiceAccountToken.Audience != "" {
					aud = strconv.Quote(s.ServiceAccountToken.Audience)
				}
				exp := int64(3600)
				if s.ServiceAccountToken.ExpirationSeconds != nil {
					exp = *s.ServiceAccountToken.ExpirationSeconds
				}
				out = append(out, kv(v.Name+" token "+s.ServiceAccountToken.Path, fmt.Sprintf(
					"TokenRequest for serviceaccount %s/%s, audience %s, expirationSeconds %d, bound to pod %s; value redacted",
					ns, sa, aud, exp, e.pod.Name)))
			}
		}
	}
	return out
}

// volumePod is the pod as the kubelet's plugins get it: with the
// annotations the kubelet's pod config adds (config.hash, config.seen,
// config.source), which a downwardAPI metadata.annotations file shows, as
// podcfg does for the env var.
func (e *Engine) volumePod() *corev1.Pod {
	pod := e.pod.DeepCopy()
	a := map[string]string{}
	for k, v := range pod.Annotations {
		a[k] = v
	}
	seen := e.opts.Config.Seen
	if seen.IsZero() {
		seen = e.now()
	}
	a[podcfg.AnnotationConfigHash] = string(pod.UID)
	a[podcfg.AnnotationConfigSeen] = seen.UTC().Format(time.RFC3339Nano)
	a[podcfg.AnnotationConfigSource] = "file"
	pod.Annotations = a
	return pod
}

// volumeDetails lists one volume: plugin and host path, then what was
// written under it (file modes and sizes, never contents).
func volumeDetails(v corev1.Volume, r volume.Result) []Detail {
	desc := fmt.Sprintf("%s %s at %s", volume.Kind(v.VolumeSource), r.Plugin, r.Path)
	switch {
	case v.Image != nil:
		desc = fmt.Sprintf("image %s: %s, pull policy %s (nothing on the node; pulled before the first container starts)", r.Plugin, v.Image.Reference, v.Image.PullPolicy)
	case v.HostPath != nil:
		t := string(corev1.HostPathUnset)
		if v.HostPath.Type != nil {
			t = string(*v.HostPath.Type)
		}
		if t == "" {
			t = `"" (no check)`
		}
		desc += ", type " + t
		if r.Created {
			desc += ", created (never removed, as by the kubelet)"
		}
	case r.Tmpfs && r.Size != "":
		desc += ", tmpfs size=" + r.Size
	case r.Tmpfs:
		desc += ", tmpfs"
	}
	if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
		desc += ", sizeLimit " + v.EmptyDir.SizeLimit.String()
	}
	out := []Detail{kv(v.Name, desc)}
	for _, en := range r.Entries {
		val := ""
		switch en.Type {
		case "symlink":
			val = "symlink → " + en.Target
		case "dir":
			val = fmt.Sprintf("dir %04o", en.Mode.Perm())
		default:
			val = fmt.Sprintf("file %04o, %d bytes", en.Mode.Perm(), en.Size)
		}
		out = append(out, kv("  "+v.Name+"/"+en.Path, val))
	}
	for _, n := range r.Notes {
		out = append(out, kv("  note", n))
	}
	return out
}

// plannedVolumePaths is where each volume will be on the host, as the
// kubelet lays them out: pods/<uid>/volumes/kubernetes.io~<plugin>/<name>,
// or the host path itself for hostPath volumes.
func (e *Engine) plannedVolumePaths() map[string]string {
	out := map[string]string{}
	h := e.volumeHost()
	for _, v := range e.pod.Spec.Volumes {
		out[v.Name] = h.PlannedPath(e.pod, e.rt.podDir, v)
	}
	return out
}

// claimDetails says, for a persistentVolumeClaim or ephemeral volume, which
// claim and PersistentVolume it resolved to, where each came from, and
// which kubelet checks it passed.
func (e *Engine) claimDetails(v corev1.Volume, c *volume.Claim) []Detail {
	if c == nil {
		return nil
	}
	out := []Detail{kv("  "+v.Name+" claim", c.String()+
		": bound, not being deleted, volumeName set, the PV's claimRef uid is the claim's, volumeMode "+volumeModeOf(c.PV)+" fits the containers' use (desired-state populator createVolumeSpec → getPVCExtractPV, getPVSpec: pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go)")}
	if c.PV.Spec.NodeAffinity != nil {
		out = append(out, kv("  "+v.Name+" node affinity", "PersistentVolume "+c.PV.Name+"'s node affinity matches node "+e.opts.Node.Name()+" (operation_generator.go GenerateMountVolumeFunc → checkNodeAffinity, pkg/volume/util/operationexecutor)"))
	}
	ns := c.PVC.Namespace
	if o := e.bundle.Origin(manifest.KindPersistentVolumeClaim, ns, c.PVC.Name); o != "" {
		out = append(out, kv("  "+v.Name+" persistentvolumeclaim "+c.PVC.Name, "from "+o))
	}
	if o := e.bundle.Origin(manifest.KindPersistentVolume, "", c.PV.Name); o != "" {
		out = append(out, kv("  "+v.Name+" persistentvolume "+c.PV.Name, "from "+o))
	}
	return out
}

func volumeModeOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.VolumeMode != nil {
		return string(*pv.Spec.VolumeMode)
	}
	return string(corev1.PersistentVolumeFilesystem)
}
