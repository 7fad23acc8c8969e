package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// fakeTokens is a TokenSource that records its requests.
type fakeTokens struct {
	reqs []*authenticationv1.TokenRequest
	sa   []string
	err  error
}

func (f *fakeTokens) GetServiceAccountToken(ns, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.reqs = append(f.reqs, tr)
	f.sa = append(f.sa, ns+"/"+name)
	if f.err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", f.err)
	}
	out := tr.DeepCopy()
	out.Status.Token = "token-for-" + name
	return out, nil
}

// TestTokenProjection: with a TokenSource, a serviceAccountToken source is
// asked as projected.go collectData asks the token manager, and its token
// is written at its path (0600 when the volume gets an owner).
func TestTokenProjection(t *testing.T) {
	src := func(aud string) corev1.VolumeSource {
		return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: aud, ExpirationSeconds: ptr[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Items: []corev1.KeyToPath{{Key: "level", Path: "level"}}}}}}}
	}
	cases := []struct {
		name     string
		aud      string
		fsGroup  bool
		wantAuds int
		wantMode os.FileMode
	}{
		{"no audience", "", false, 0, 0o644},
		{"audience vault", "vault", false, 1, 0o644},
		{"fsGroup", "", true, 0, 0o600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.ServiceAccountName = "web"
			if c.fsGroup {
				pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr(int64(os.Getgid()))}
			}
			tok := &fakeTokens{}
			h := testHost(testSource())
			h.Tokens = tok
			dir := filepath.Join(t.TempDir(), "vol")
			r, err := h.Setup(context.Background(), pod, corev1.Volume{Name: "kube-api-access", VolumeSource: src(c.aud)}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Secret {
				t.Error("a volume with a token is not marked Secret")
			}
			if len(tok.reqs) != 1 || tok.sa[0] != "default/web" {
				t.Fatalf("requests %v", tok.sa)
			}
			spec := tok.reqs[0].Spec
			if len(spec.Audiences) != c.wantAuds || *spec.ExpirationSeconds != 3607 ||
				spec.BoundObjectRef == nil || spec.BoundObjectRef.Name != "demo" || spec.BoundObjectRef.UID != pod.UID || spec.BoundObjectRef.Kind != "Pod" {
				t.Errorf("request spec %+v", spec)
			}
			b, err := os.ReadFile(filepath.Join(dir, "token"))
			if err != nil || string(b) != "token-for-web" {
				t.Errorf("token file %q, %v", b, err)
			}
			// SetVolumeOwnership widens 0600 to 0640 under an fsGroup.
			fi, err := os.Stat(filepath.Join(dir, "token"))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.wantMode && (!c.fsGroup || got != 0o640) {
				t.Errorf("token mode %v, want %v", got, c.wantMode)
			}
		})
	}
	// A failed TokenRequest is the kubelet's error, aggregated with the others.
	tok := &fakeTokens{err: errors.New(`serviceaccounts "web" not found`)}
	h := testHost(testSource())
	h.Tokens = tok
	pod := testPod()
	pod.Spec.ServiceAccountName = "web"
	_, err := h.Setup(context.Background(), pod, corev1.Volume{Name: "v", VolumeSource: src("")}, filepath.Join(t.TempDir(), "v"))
	want := `MountVolume.SetUp failed for volume "v" : failed to fetch token: serviceaccounts "web" not found`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}
