package shadow

import "testing"

// TestExportRef: the tag exported for a pod's image is the name the pod
// asks for when the image has it among many (an image retagged under other
// names lists them sorted: its first tag is another image's name).
func TestExportRef(t *testing.T) {
	tags := []string{"docker.io/kubernetes/pause:latest", "docker.io/library/busybox:1.35", "quay.io/x/y:2", "registry.local:5000/a/b:latest"}
	for _, tc := range []struct{ img, want string }{
		{"docker.io/library/busybox:1.35", "docker.io/library/busybox:1.35"},
		{"busybox:1.35", "docker.io/library/busybox:1.35"},
		{"quay.io/x/y:2", "quay.io/x/y:2"},
		{"registry.local:5000/a/b", "registry.local:5000/a/b:latest"},
		{"kubernetes/pause", "docker.io/kubernetes/pause:latest"},
		{"nginx:1.27", "docker.io/kubernetes/pause:latest"}, // not among them: the first
	} {
		if got := exportRef(tc.img, tags); got != tc.want {
			t.Errorf("exportRef(%q) = %q, want %q", tc.img, got, tc.want)
		}
	}
}
