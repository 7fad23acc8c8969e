package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
)

// TestRunImageConfig runs a runAsNonRoot pod on the simulator with
// --image-config auto against a registry behind basic auth: with the pull
// secret the image's USER 1000 lets it run, and the text, the JSON and the
// recording say the verdict rests on the registry's image and digest; a
// wrong password fails the pull as on a node (ErrImagePull, exit 1). No output holds
// the password. (The tests' TestMain sets PODSTEP_IMAGE_CONFIG=off; the
// flag given wins over it.)
func TestRunImageConfig(t *testing.T) {
	const user, password = "puller", "Cmd-pa55word-7"
	reg := imageconfigtest.New(t, user, password)
	dig := reg.Push(t, "team/app", "1.0", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1000", Entrypoint: []string{"/server"}}))
	image, source := reg.Host+"/team/app:1.0", reg.Host+"/team/app@"+dig
	manifest := func(pw string) string { return regcredPod(t, reg.Host, user, pw, "image: "+image) }
	for _, tc := range []struct {
		name, password, output string
		exit                   int
		want                   []string
	}{
		{name: "text", password: password, output: "text",
			want: []string{"image user: uid 1000, image config from " + source, "cannot read `/server`; image config from " + source}},
		{name: "json", password: password, output: "json",
			want: []string{`"rests_on":[`, `image config from ` + source}},
		{name: "wrong password", password: "Wrong-pa55", output: "text", exit: ExitPodFailed,
			want: []string{"ErrImagePull: failed to pull and unpack image \"" + image + "\": failed to resolve image: unexpected status from HEAD request to http://" +
				reg.Host + "/v2/team/app/manifests/1.0: 401 Unauthorized"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, logs := dirs(t)
			rec := filepath.Join(t.TempDir(), "run.rec")
			code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "-o", tc.output, "-f", manifest(tc.password),
				"--image-config", "auto", "--image-config-no-cache", "--record", rec, "--root-dir", root, "--log-dir", logs)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.exit, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			recorded, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.password == password && !strings.Contains(string(recorded), "image config from "+source) {
				t.Errorf("the recording does not say what the run rests on")
			}
			auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + tc.password))
			for what, s := range map[string]string{"stdout": out, "stderr": errOut, "recording": string(recorded)} {
				for _, secret := range []string{tc.password, auth} {
					if strings.Contains(s, secret) {
						t.Errorf("%s holds the secret %q", what, secret)
					}
				}
			}
		})
	}
}

// TestImageConfigFlags: a bad --image-config is a usage error, exit 2.
func TestImageConfigFlags(t *testing.T) {
	root, logs := dirs(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--image-config", "sometimes"}, `--image-config "sometimes": expected auto or off`},
		{[]string{"--image-config-timeout", "0s"}, "--image-config-timeout 0s: expected a duration from 1ms to 10m"},
		{[]string{"--image-config-timeout", "1h"}, "--image-config-timeout 1h0m0s: expected a duration from 1ms to 10m"},
	} {
		args := append([]string{"run", "--auto", "--sim", "-f", "../../testdata/pods/hello.yaml", "--root-dir", root, "--log-dir", logs}, tc.args...)
		code, out, errOut := run(t, args...)
		if code != 2 || !strings.Contains(errOut+out, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// regcredPod writes a pod file: a dockerconfigjson Secret regcred with
// user:password for host, and a pod "app" (runAsNonRoot) that names it in
// imagePullSecrets and has one container "app" whose image fields are
// image (e.g. "image: HOST/team/app:1.0").
func regcredPod(t *testing.T, host, user, password, image string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"username": user, "password": password, "auth": auth}}})
	y := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  imagePullSecrets: [{name: regcred}]
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: app, %s}
`, base64.StdEncoding.EncodeToString(cfg), image)
	f := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(f, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
