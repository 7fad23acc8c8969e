package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/manifest"
)

// TestResolveClaims: the claim of each persistentVolumeClaim and ephemeral
// volume and the PV a claim is bound to are read with one GET each (the
// file's own are not), with their origins; a missing one is left for the
// volumes step; a denied GET is an *AccessError naming the verb.
func TestResolveClaims(t *testing.T) {
	pvc := func(name, pv string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", UID: claimUID(name), ResourceVersion: "5"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data", ResourceVersion: "6"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "app", UID: "0123"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "x"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "gone", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "gone"}}},
		}}}
	for _, tt := range []struct {
		name     string
		objs     []runtime.Object
		file     bool // the file has claim data-db-0
		deny     bool
		requests string
		err      string
	}{
		{name: "claims and their PV", objs: []runtime.Object{pvc("data-db-0", "pv-data"), pvc("db-0-scratch", ""), pv},
			requests: "get persistentvolumeclaims app/data-db-0,get persistentvolumes pv-data,get persistentvolumeclaims app/db-0-scratch,get persistentvolumeclaims app/gone"},
		{name: "the file's claim is not fetched, its PV is", objs: []runtime.Object{pv}, file: true,
			requests: "get persistentvolumes pv-data,get persistentvolumeclaims app/db-0-scratch,get persistentvolumeclaims app/gone"},
		{name: "denied", objs: []runtime.Object{pv}, deny: true, err: `denied "get" on "persistentvolumeclaims"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objs...)
			if tt.deny {
				cs.PrependReactor("get", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-db-0", errors.New("RBAC: access denied"))
				})
			}
			c := NewForTest(kubefake.New(cs), "https://api.test:6443")
			b := &manifest.Bundle{Pod: pod.DeepCopy(), Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
			if tt.file {
				b.Claims = map[string]*corev1.PersistentVolumeClaim{"app/data-db-0": pvc("data-db-0", "pv-data")}
			}
			r, err := c.Resolve(context.Background(), b, nil, ResolveOptions{NoNode: true, NoTokens: true})
			if tt.err != "" {
				var ae *AccessError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want an *AccessError with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range cs.Actions() {
				res := a.GetResource().Resource
				if g, ok := a.(clienttesting.GetAction); ok && (res == "persistentvolumeclaims" || res == "persistentvolumes") {
					s := "get " + res + " "
					if g.GetNamespace() != "" {
						s += g.GetNamespace() + "/"
					}
					got = append(got, s+g.GetName())
				}
			}
			if strings.Join(got, ",") != tt.requests {
				t.Errorf("requests\n got %s\nwant %s", strings.Join(got, ","), tt.requests)
			}
			if _, ok := b.PersistentVolume("pv-data"); !ok {
				t.Error("PV pv-data not in the bundle")
			}
			if o := b.Origin(manifest.KindPersistentVolume, "", "pv-data"); !strings.Contains(o, "resourceVersion 6") {
				t.Errorf("PV origin %q", o)
			}
			if _, ok := b.PersistentVolumeClaim("app", "gone"); ok {
				t.Error("a claim the API server does not have is in the bundle")
			}
			found := 0
			for _, f := range r.Fetched {
				if f.Kind == manifest.KindPersistentVolumeClaim || f.Kind == manifest.KindPersistentVolume {
					found++
				}
			}
			if found != len(got) {
				t.Errorf("%d claim/PV entries in Fetched, %d requests", found, len(got))
			}
		})
	}
}

func claimUID(name string) ktypes.UID { return ktypes.UID("uid-" + name) }

// TestResolveCSIDrivers: the CSIDriver of an inline CSI volume's driver
// and of a claim's CSI PV's driver are read with one GET each (once per
// driver; the file's own not), with their origin; a missing one is left
// out (the kubelet then takes the driver as needing attach).
func TestResolveCSIDrivers(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data", ResourceVersion: "6"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "pv.csi.example.com", VolumeHandle: "h"}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "inline.csi.example.com", ResourceVersion: "7"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", UID: "0123"}, Spec: corev1.PodSpec{
		NodeName:   "node-1",
		Containers: []corev1.Container{{Name: "c", Image: "x"}},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "inline.csi.example.com"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "inline.csi.example.com"}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		}}}
	cs := fake.NewClientset(pv, claim, driver)
	c := NewForTest(kubefake.New(cs), "https://api.test:6443")
	b := &manifest.Bundle{Pod: pod, Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	if _, err := c.Resolve(context.Background(), b, nil, ResolveOptions{NoNode: true, NoTokens: true}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cs.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetResource().Resource == "csidrivers" {
			got = append(got, g.GetName())
		}
	}
	if strings.Join(got, ",") != "inline.csi.example.com,pv.csi.example.com" {
		t.Errorf("csidrivers GETs %v", got)
	}
	if _, ok := b.CSIDriver("inline.csi.example.com"); !ok {
		t.Error("CSIDriver not in the bundle")
	}
	if o := b.Origin(manifest.KindCSIDriver, "", "inline.csi.example.com"); !strings.Contains(o, "resourceVersion 7") {
		t.Errorf("origin %q", o)
	}
	if _, ok := b.CSIDriver("pv.csi.example.com"); ok {
		t.Error("a CSIDriver the API server does not have is in the bundle")
	}
	// The PV's driver has no CSIDriver: it needs attach, and its
	// VolumeAttachment on the pod's node is read.
	va := ""
	for _, a := range cs.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetResource().Resource == "volumeattachments" {
			va = g.GetName()
		}
	}
	if want := csi.AttachmentName("h", "pv.csi.example.com", "node-1"); va != want {
		t.Errorf("volumeattachments GET %q, want %q", va, want)
	}
}
