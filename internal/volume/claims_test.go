package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claims is a ClaimSource over maps.
type claims struct {
	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
}

func (c claims) PersistentVolumeClaim(ns, name string) (*corev1.PersistentVolumeClaim, bool) {
	p, ok := c.pvcs[ns+"/"+name]
	return p, ok
}

func (c claims) PersistentVolume(name string) (*corev1.PersistentVolume, bool) {
	p, ok := c.pvs[name]
	return p, ok
}

func boundClaim(name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "claim-uid-1"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func hostPathPV(name, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr(corev1.HostPathDirectoryOrCreate)}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid-1"},
		},
	}
}

// TestClaims: a persistentVolumeClaim volume goes through the kubelet's
// populator checks (createVolumeSpec, getPVCExtractPV, getPVSpec), the
// operation generator's node affinity check, then the PV's plugin; each
// failure has the kubelet's text and a way forward.
func TestClaims(t *testing.T) {
	hostDir := t.TempDir()
	pvcVol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	affinity := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}}
	cases := []struct {
		name    string
		vol     corev1.Volume
		devices bool // the container uses the volume as a device
		edit    func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume)
		noPVC   bool
		noPV    bool
		want    string // the error ("" = set up)
		hint    string // in the way forward
	}{
		{name: "bound hostPath", vol: pvcVol},
		{name: "no claim", vol: pvcVol, noPVC: true,
			want: `error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`, hint: "--kubeconfig"},
		{name: "pending", vol: pvcVol, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.Status.Phase = corev1.ClaimPending
		},
			want: "error processing PVC default/data: PVC is not bound", hint: "status.phase Bound"},
		{name: "deleting", vol: pvcVol, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.DeletionTimestamp = &metav1.Time{}
		},
			want: "error processing PVC default/data: PVC is being deleted", hint: "deletionTimestamp"},
		{name: "no volumeName", vol: pvcVol, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.Spec.VolumeName = "" },
			want: "error processing PVC default/data: PVC has empty pvc.Spec.VolumeName", hint: "spec.volumeName"},
		{name: "no PV", vol: pvcVol, noPV: true,
			want: `error processing PVC default/data: failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found`, hint: "add PersistentVolume pv-1"},
		{name: "no claimRef", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef = nil },
			want: "error processing PVC default/data: found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", hint: "spec.claimRef"},
		{name: "other claim", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "other" },
			want: "error processing PVC default/data: found PV object pv-1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-uid-1", hint: "claimRef.uid"},
		{name: "block in volumeMounts", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
			v.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock)
		},
			want: "volume v has volumeMode Block, but is specified in volumeMounts", hint: "volumeDevices"},
		{name: "filesystem in volumeDevices", vol: pvcVol, devices: true,
			want: "volume v has volumeMode Filesystem, but is specified in volumeDevices", hint: "volumeMounts"},
		{name: "node affinity", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.NodeAffinity = affinity },
			want: `MountVolume.NodeAffinity check failed for volume "v" : no matching NodeSelectorTerms`, hint: "--node"},
		{name: "csi PV", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
			v.Spec.HostPath, v.Spec.CSI = nil, &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csi.k8s.io", VolumeHandle: "h1"}
		}, want: `MountVolume.MountDevice failed for volume "v" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name hostpath.csi.k8s.io not found in the list of registered CSI drivers`, hint: "--csi-endpoint hostpath.csi.k8s.io=unix:///PATH"},
		{name: "migrated EBS", vol: pvcVol, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
			v.Spec.HostPath, v.Spec.AWSElasticBlockStore = nil, &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}
		}, want: "CSI migration moves it to the CSI driver ebs.csi.aws.com", hint: "ebs.csi.aws.com"},
		{name: "ephemeral owned", vol: corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}},
		{name: "ephemeral not owned", vol: corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.OwnerReferences = nil },
			want: "PVC default/demo-scratch was not created for pod default/demo (pod is not owner)", hint: "ownerReference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			cont := &pod.Spec.Containers[0]
			if c.devices {
				cont.VolumeDevices = []corev1.VolumeDevice{{Name: c.vol.Name, DevicePath: "/dev/xvda"}}
			} else {
				cont.VolumeMounts = []corev1.VolumeMount{{Name: c.vol.Name, MountPath: "/data"}}
			}
			claimName := ClaimName(pod, c.vol)
			pvc := boundClaim(claimName, "pv-1")
			if c.vol.Ephemeral != nil {
				pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr(true)}}
			}
			path := filepath.Join(hostDir, c.name)
			pv := hostPathPV("pv-1", path)
			pv.Spec.ClaimRef.Name = claimName
			if c.edit != nil {
				c.edit(pvc, pv)
			}
			src := claims{pvcs: map[string]*corev1.PersistentVolumeClaim{}, pvs: map[string]*corev1.PersistentVolume{}}
			if !c.noPVC {
				src.pvcs["default/"+claimName] = pvc
			}
			if !c.noPV {
				src.pvs["pv-1"] = pv
			}
			h := testHost(testSource())
			h.Claims, h.NodeName, h.NodeLabels = src, "node-b", map[string]string{"kubernetes.io/hostname": "node-b"}
			r, err := h.Setup(context.Background(), pod, c.vol, filepath.Join(t.TempDir(), "pods", string(pod.UID), "volumes", "x", c.vol.Name))
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r.Path != path || r.Plugin != PluginHostPath || !r.Created {
					t.Errorf("result %+v, want the PV's hostPath %s created", r, path)
				}
				if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
					t.Errorf("hostPath %s not made: %v", path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v\nwant %s", err, c.want)
			}
			if strings.HasPrefix(c.want, "error processing") || strings.HasPrefix(c.want, "MountVolume") || strings.HasPrefix(c.want, "volume ") {
				if err.Error() != c.want {
					t.Errorf("err %q\nwant exactly %q", err, c.want)
				}
			}
			var ve *Error
			if !errors.As(err, &ve) || ve.Volume != c.vol.Name {
				t.Errorf("err %T, want *Error for volume %s", err, c.vol.Name)
			}
			if h := Hint(err); !strings.Contains(h, c.hint) {
				t.Errorf("hint %q does not mention %q", h, c.hint)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s made for a volume that failed", path)
			}
		})
	}
}

// TestPlaceholders: without an API server a kube-api-access volume gets a
// labelled placeholder token (not a JWT) and, when the manifest has no
// kube-root-ca.crt, a labelled placeholder ca.crt, each with one warning;
// with the ConfigMap in the manifest its ca.crt is written.
func TestPlaceholders(t *testing.T) {
	vol := corev1.Volume{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}}}}
	for _, withCA := range []bool{false, true} {
		src := testSource()
		if withCA {
			src.cms["default/"+RootCAConfigMap] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: "default"}, Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}}
		}
		h := testHost(src)
		h.Placeholders = true
		dir := filepath.Join(t.TempDir(), "vol")
		r, err := h.Setup(context.Background(), testPod(), vol, dir)
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := os.ReadFile(filepath.Join(dir, "token"))
		if string(tok) != PlaceholderToken || strings.Contains(string(tok), ".") {
			t.Errorf("token = %q, want the placeholder (no JWT)", tok)
		}
		ca, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
		wantWarn := []string{WarnPlaceholderToken, WarnPlaceholderRootCA}
		if withCA {
			wantWarn = wantWarn[:1]
			if string(ca) != "-----BEGIN CERTIFICATE-----\n" {
				t.Errorf("ca.crt = %q, want the ConfigMap's", ca)
			}
		} else if string(ca) != PlaceholderRootCA {
			t.Errorf("ca.crt = %q, want the placeholder", ca)
		}
		if strings.Join(r.Warnings, "\n") != strings.Join(wantWarn, "\n") {
			t.Errorf("withCA %v: warnings %q, want %q", withCA, r.Warnings, wantWarn)
		}
	}
}

// TestLocalPV: a local PersistentVolume is bind-mounted at
// pods/UID/volumes/kubernetes.io~local-volume/PV (read-only for a
// read-only claim) on a real runtime, used at its path on the simulator,
// and the pod's teardown unmounts it and leaves the local path's files.
// The bind mount needs root.
func TestLocalPV(t *testing.T) {
	local := t.TempDir()
	if err := os.WriteFile(filepath.Join(local, "seed"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		simulated bool
		readOnly  bool
	}{{"simulator", true, false}, {"bind mount", false, false}, {"read-only bind mount", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.simulated && os.Geteuid() != 0 {
				t.Skip("a bind mount needs root")
			}
			pod := testPod()
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data"}}
			vol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: tc.readOnly}}}
			pv := hostPathPV("pv-local", "")
			pv.Spec.HostPath, pv.Spec.Local = nil, &corev1.LocalVolumeSource{Path: local}
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}}
			h := testHost(testSource())
			h.Claims = claims{pvcs: map[string]*corev1.PersistentVolumeClaim{"default/data": boundClaim("data", "pv-local")}, pvs: map[string]*corev1.PersistentVolume{"pv-local": pv}}
			h.NodeName, h.NodeLabels, h.Simulated, h.Mount = "node-a", map[string]string{"kubernetes.io/hostname": "node-a"}, tc.simulated, !tc.simulated
			podDir := filepath.Join(t.TempDir(), "pods", string(pod.UID))
			planned := h.PlannedPath(pod, podDir, vol)
			r, err := h.Setup(context.Background(), pod, vol, planned)
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(podDir, "volumes", "kubernetes.io~local-volume", "pv-local")
			if tc.simulated {
				want = local
			}
			if r.Path != want || planned != want || r.Plugin != PluginLocal {
				t.Fatalf("path %s (planned %s) plugin %s, want %s %s", r.Path, planned, r.Plugin, want, PluginLocal)
			}
			if data, err := os.ReadFile(filepath.Join(r.Path, "seed")); err != nil || string(data) != "kept" {
				t.Fatalf("the local path's file is not at %s: %q %v", r.Path, data, err)
			}
			if tc.simulated {
				return
			}
			werr := os.WriteFile(filepath.Join(r.Path, "new"), nil, 0o644)
			if tc.readOnly != (werr != nil) {
				t.Errorf("read-only %v: write error %v", tc.readOnly, werr)
			}
			done, err := TeardownPod(podDir)
			if err != nil || len(done) != 1 {
				t.Fatalf("teardown: %v, unmounted %v", err, done)
			}
			if err := os.RemoveAll(podDir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(local, "seed")); err != nil {
				t.Errorf("the local path lost its file: %v", err)
			}
		})
	}
}
