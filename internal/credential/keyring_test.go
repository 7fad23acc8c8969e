package credential

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func secret(name, cfg string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
}

func TestLookup(t *testing.T) {
	var k Keyring
	err := k.Add(secret("regcred", `{"auths":{
		"registry.example:5000": {"username":"port","password":"p1"},
		"registry.example": {"username":"noport","password":"p2"},
		"registry.example/team": {"username":"team","password":"p3"},
		"*.corp.example": {"username":"wild","password":"p4"},
		"https://index.docker.io/v1/": {"auth":"aHViOnA1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ image, user string }{
		{"registry.example:5000/app:1", "port"},
		{"registry.example/other/app:1", "noport"},
		{"registry.example/team/app:1", "team"}, // the longer path prefix wins
		{"eu.corp.example/app", "wild"},
		{"a.b.corp.example/app", ""}, // * matches one label only
		{"busybox:1.35", "hub"},      // docker.io, from the legacy index key and base64 auth
		{"registry.example:5001/app", ""},
		{"other.example/app", ""},
	}
	for _, tc := range cases {
		hits := k.Lookup(tc.image)
		got := ""
		if len(hits) > 0 {
			got = hits[0].Username
		}
		if got != tc.user {
			t.Errorf("Lookup(%q) = %q, want %q", tc.image, got, tc.user)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ in, host, repo string }{
		{"busybox", "docker.io", "library/busybox"},
		{"busybox:1.35", "docker.io", "library/busybox"},
		{"user/app@sha256:abc", "docker.io", "user/app"},
		{"localhost/app:1", "localhost", "app"},
		{"127.0.0.1:5000/team/app:1", "127.0.0.1:5000", "team/app"},
	} {
		h, r := Split(tc.in)
		if h != tc.host || r != tc.repo {
			t.Errorf("Split(%q) = %q %q, want %q %q", tc.in, h, r, tc.host, tc.repo)
		}
	}
}

func TestAddRejectsWrongType(t *testing.T) {
	var k Keyring
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Type: corev1.SecretTypeOpaque}
	if err := k.Add(s); err == nil {
		t.Fatal("an Opaque secret was accepted as a pull secret")
	}
}
