package manifest

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
)

// TestCSIDriver: a CSIDriver is defaulted as the API server does and
// validated as ValidateCSIDriver, each error with its field path.
func TestCSIDriver(t *testing.T) {
	const pod = "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx}]}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"defaults", "metadata: {name: d.example.com}", ""},
		{"no name", "metadata: {}", "metadata.name: required value"},
		{"long name", "metadata: {name: " + strings.Repeat("a", 64) + "}", "metadata.name: too long: 64 characters"},
		{"bad name", "metadata: {name: bad_name}", `metadata.name: invalid value "bad_name"`},
		{"upper case is fine", "metadata: {name: Hostpath.CSI.k8s.io}", ""},
		{"namespaced", "metadata: {name: d, namespace: x}", "metadata.namespace: not allowed"},
		{"fsGroupPolicy", "metadata: {name: d}\nspec: {fsGroupPolicy: Always}", `spec.fsGroupPolicy: unsupported value "Always"`},
		{"lifecycle", "metadata: {name: d}\nspec: {volumeLifecycleModes: [Persistent, Inline]}", `spec.volumeLifecycleModes[1]: unsupported value "Inline"`},
		{"token audience twice", "metadata: {name: d}\nspec: {tokenRequests: [{audience: a}, {audience: a}]}", `spec.tokenRequests[1].audience: duplicate value "a"`},
		{"token short", "metadata: {name: d}\nspec: {tokenRequests: [{audience: a, expirationSeconds: 599}]}", "spec.tokenRequests[0].expirationSeconds: invalid value 599"},
		{"token long", "metadata: {name: d}\nspec: {tokenRequests: [{audience: a, expirationSeconds: 4294967297}]}", "larger than 2^32"},
		{"period", "metadata: {name: d}\nspec: {nodeAllocatableUpdatePeriodSeconds: 9}", "spec.nodeAllocatableUpdatePeriodSeconds: invalid value 9"},
		{"token in secrets", "metadata: {name: d}\nspec: {serviceAccountTokenInSecrets: true}", "spec.serviceAccountTokenInSecrets: invalid value true"},
		{"unknown field", "metadata: {name: d}\nspec: {attachRequire: false}", `spec.attachRequire`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Parse("t.yaml", []byte("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\n"+tc.doc+pod))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.CSIDrivers) != 1 {
				t.Fatalf("CSIDrivers %v", b.CSIDrivers)
			}
			for _, d := range b.CSIDrivers {
				s := d.Spec
				if !*s.AttachRequired || *s.PodInfoOnMount || *s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy ||
					len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent || d.Namespace != "" {
					t.Errorf("defaults: %+v", d)
				}
			}
		})
	}
}

// TestVolumeAttachment: validated as ValidateVolumeAttachment, with field paths.
func TestVolumeAttachment(t *testing.T) {
	const pod = "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx}]}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"ok", "metadata: {name: csi-abc}\nspec: {attacher: d.example.com, nodeName: node-1, source: {persistentVolumeName: pv-1}}\nstatus: {attached: true}", ""},
		{"no attacher", "metadata: {name: csi-abc}\nspec: {nodeName: node-1, source: {persistentVolumeName: pv-1}}", "spec.attacher: required value"},
		{"no source", "metadata: {name: csi-abc}\nspec: {attacher: d, nodeName: node-1, source: {}}", "spec.source: required value"},
		{"bad node", "metadata: {name: csi-abc}\nspec: {attacher: d, nodeName: Node_1, source: {persistentVolumeName: pv-1}}", `spec.nodeName: invalid value "Node_1"`},
		{"namespaced", "metadata: {name: csi-abc, namespace: x}\nspec: {attacher: d, nodeName: node-1, source: {persistentVolumeName: pv-1}}", "metadata.namespace: not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Parse("t.yaml", []byte("apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\n"+tc.doc+pod))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := b.VolumeAttachment("csi-abc"); !ok || !a.Status.Attached {
				t.Errorf("VolumeAttachments %v", b.VolumeAttachments)
			}
		})
	}
}
