//go:build integration

package integration

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSimImageConfigFromHarnessRegistry runs pods of the harness registry's
// private image (hack/containerd-up.sh: busybox, CMD sh, no USER, behind
// htpasswd on loopback) on the SIMULATED runtime with --image-config auto:
// the simulator reads the image's config with the pod's pull secret, so
// runAsNonRoot fails as on a node (no USER is root) and a container with no
// command runs the image's CMD, each verdict naming
// REGISTRY/podstep/private-busybox@sha256:…; a wrong password fails the
// pull in containerd 2's words (ErrImagePull), as on a node. The password
// shows in no output.
// The image's name holds "busybox", which the simulator preloads: the pods
// pull with Always, so that PullImage (and the read) happens.
func TestSimImageConfigFromHarnessRegistry(t *testing.T) {
	e, reg := setupRegistry(t)
	repo := strings.TrimPrefix(reg.image, reg.addr+"/")
	repo, _, _ = strings.Cut(repo, ":")
	source := reg.addr + "/" + repo + "@sha256:"
	for _, tc := range []struct {
		name, password, spec string
		code                 int
		display              string
		restsOn              []string // each in some step's rests_on
		warning              string   // in some step's warnings ("": none may say it)
		message              string   // the failed step's message
		// asRuntime: the failed step's message is what containerd answers
		// (test/integration's pullDenied, measured on the harness).
		asRuntime *regexp.Regexp
	}{
		{name: "runAsNonRoot, no USER: root", password: reg.password, code: 1, display: "CreateContainerConfigError",
			spec:    "  securityContext: {runAsNonRoot: true}\n  containers:\n  - {name: app, image: IMAGE, imagePullPolicy: Always}\n",
			message: "container has runAsNonRoot and image will run as root",
			restsOn: []string{"image user: none (no USER: root), image config from " + source}},
		{name: "no command: the image's CMD", password: reg.password, code: 0, display: "Completed",
			spec:    "  restartPolicy: Never\n  containers:\n  - {name: app, image: IMAGE, imagePullPolicy: Always}\n",
			restsOn: []string{"image CMD: ", "; image config from " + source}},
		{name: "wrong password: ErrImagePull in containerd 2's words", password: "Wrong-" + reg.password + "-Pw", code: 1, display: "ErrImagePull",
			spec:      "  securityContext: {runAsNonRoot: true}\n  containers:\n  - {name: app, image: IMAGE, imagePullPolicy: Always}\n",
			asRuntime: pullDenied(t, runtimeUnderTest{name: "containerd", version: "v2", major: 2}, reg, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + tc.password))
			cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
				reg.addr: map[string]string{"username": reg.user, "password": tc.password, "auth": auth}}})
			if err != nil {
				t.Fatal(err)
			}
			data := base64.StdEncoding.EncodeToString(cfg)
			y := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s\n---\n"+
				"apiVersion: v1\nkind: Pod\nmetadata: {name: image-config}\nspec:\n  imagePullSecrets: [{name: regcred}]\n%s",
				data, strings.ReplaceAll(tc.spec, "IMAGE", reg.image))
			path := filepath.Join(t.TempDir(), "pod.yaml")
			if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			d := newDirs(t)
			r := e.podstep(t, "run", "--sim", "--auto", "-o", "json", "-f", path, "--image-config", "auto", "--image-config-no-cache",
				"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
			if r.startEv == nil || !r.startEv.Runtime.Simulated {
				t.Fatalf("not on the simulated runtime\n%s", r)
			}
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r)
			}
			if r.summary == nil || r.summary.Display != tc.display {
				t.Fatalf("summary %+v, want display %s\n%s", r.summary, tc.display, r)
			}
			if tc.message != "" && (r.summary.Failure == nil || !strings.Contains(r.summary.Failure.Message, tc.message)) {
				t.Errorf("failure %+v, want a message with %q", r.summary.Failure, tc.message)
			}
			if tc.asRuntime != nil && (r.summary.Failure == nil || !tc.asRuntime.MatchString(r.summary.Failure.Message)) {
				t.Errorf("failure %+v, want a message as containerd's: %s", r.summary.Failure, tc.asRuntime)
			}
			var restsOn, warnings []string
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				var s struct {
					Type     string   `json:"type"`
					RestsOn  []string `json:"rests_on"`
					Warnings []string `json:"warnings"`
				}
				if json.Unmarshal(sc.Bytes(), &s) == nil && s.Type == "step" {
					restsOn = append(restsOn, s.RestsOn...)
					warnings = append(warnings, s.Warnings...)
				}
			}
			all := strings.Join(restsOn, "\n")
			for _, want := range tc.restsOn {
				if !strings.Contains(all, want) {
					t.Errorf("rests_on:\n%s\nwant %q in it", all, want)
				}
			}
			w := strings.Join(warnings, "\n")
			switch {
			case tc.warning != "" && strings.Count(w, tc.warning) != 1:
				t.Errorf("warnings:\n%s\nwant %q once", w, tc.warning)
			case tc.warning == "" && strings.Contains(w, "could not read the config"):
				t.Errorf("warnings:\n%s\nwant no image config warning", w)
			}
			for _, secret := range []string{tc.password, auth, data, reg.password} {
				assertNoSecret(t, "output", r.stdout+r.stderr, []string{secret})
			}
		})
	}
}
