package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/reason"
)

const tokenPod = `apiVersion: v1
kind: Pod
metadata: {name: tok, namespace: app}
spec:
  serviceAccountName: web
  containers:
  - name: app
    image: registry.example/app:1
    volumeMounts: [{name: kube-api-access, mountPath: /var/run/secrets/kubernetes.io/serviceaccount}]
  volumes:
  - name: kube-api-access
    projected:
      sources:
      - serviceAccountToken: {path: token, audience: vault, expirationSeconds: 600}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-root-ca.crt, namespace: app}
data: {ca.crt: CA}
`

// stubTokens is a TokenSource answering with one token (or an error).
type stubTokens struct {
	token string
	err   error
}

func (s stubTokens) GetServiceAccountToken(ns, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if s.err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", s.err)
	}
	out := tr.DeepCopy()
	out.Status.Token = s.token
	return out, nil
}

// TestTokenVolume: with Options.Tokens, the kube-api-access volume is set
// up; the token is redacted wherever the engine shows text, and the step
// says which service account, audience and expiry it was minted for and
// where the ConfigMap came from. A failed TokenRequest is the kubelet's
// FailedMount.
func TestTokenVolume(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.dG9rZW4tZm9yLXdlYg.c2ln"
	b := parse(t, tokenPod)
	b.Origins = map[string]string{manifest.OriginKey(manifest.KindConfigMap, "app", "kube-root-ca.crt"): "the API server https://api (resourceVersion 8)"}
	o := testOptions(t)
	o.Tokens = stubTokens{token: token}
	e, vol := throughVolumes(t, b, o)
	var details []string
	for _, d := range vol.Result.Details {
		details = append(details, d.Key+": "+d.Value)
	}
	all := strings.Join(details, "\n")
	for _, want := range []string{
		"kube-api-access token token: TokenRequest for serviceaccount app/web, audience \"vault\", expirationSeconds 600, bound to pod tok; value redacted",
		"kube-api-access configmap kube-root-ca.crt: from the API server https://api (resourceVersion 8)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("volumes step details lack %q:\n%s", want, all)
		}
	}
	if got := e.Redactor().Text("the token is " + token); strings.Contains(got, token) || !strings.Contains(got, cri.Mask) {
		t.Errorf("the redactor does not mask the token: %q", got)
	}

	// The TokenRequest fails: FailedMount, as the kubelet's.
	o = testOptions(t)
	o.Tokens = stubTokens{err: errors.New(`serviceaccounts "web" not found`)}
	e2 := New(parse(t, tokenPod), newSim(t), o)
	t.Cleanup(func() { _ = e2.Teardown(context.Background()) })
	for i := 0; i < 3; i++ {
		_, _ = e2.Next(context.Background()) // the volumes step fails: that is the test
	}
	vol = e2.Steps()[2]
	want := `MountVolume.SetUp failed for volume "kube-api-access" : failed to fetch token: serviceaccounts "web" not found`
	if vol.State != Failed || vol.Result.Reason != reason.FailedMountVolume || vol.Result.Err == nil || vol.Result.Err.Error() != want {
		t.Errorf("volumes step %s, reason %s, err %v; want FailedMount %q", vol.State, vol.Result.Reason, vol.Result.Err, want)
	}
}
