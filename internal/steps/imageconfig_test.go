package steps

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
)

// TestSimulatedImageConfig runs pods on the simulator with an image config
// reader and a registry behind basic auth: the image's USER, read with the
// pod's pull secret, decides runAsNonRoot as on a node, and the verdict
// names the registry and digest it rests on; a wrong or missing secret, or
// a missing tag, fails the pull as on a node (ErrImagePull, containerd's
// words); a config that cannot be read is one warning, and the run goes on
// with the labelled assumption. The
// password shows nowhere in the steps (their JSON).
func TestSimulatedImageConfig(t *testing.T) {
	const user, password = "puller", "Reg-pa55word-42"
	reg := imageconfigtest.New(t, user, password)
	push := func(repo string, c imageconfig.Config) (ref, source string) {
		dig := reg.Push(t, repo, "1.0", imageconfigtest.ConfigJSON(c))
		return reg.Host + "/" + repo + ":1.0", reg.Host + "/" + repo + "@" + dig
	}
	nonRoot, nonRootSrc := push("team/nonroot", imageconfig.Config{User: "1000", Entrypoint: []string{"/server"}, Cmd: []string{"--serve"}})
	root, rootSrc := push("team/root", imageconfig.Config{User: "0", Entrypoint: []string{"/server"}})
	named, namedSrc := push("team/named", imageconfig.Config{User: "root", Entrypoint: []string{"/server"}})
	noUser, noUserSrc := push("team/nouser", imageconfig.Config{Entrypoint: []string{"sh", "-c", "exit 5"}})
	reg.Push(t, "team/garbage", "1.0", []byte("\x00 not a config"))
	garbage := reg.Host + "/team/garbage:1.0"

	secret := func(pw string) string {
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: map[string]string{"username": user, "password": pw, "auth": auth}}})
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: regcred, namespace: default}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s\n---\n",
			base64.StdEncoding.EncodeToString(cfg))
	}
	pod := func(sec, image, extra string) string {
		s := sec + "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: u1}\nspec:\n"
		if sec != "" {
			s += "  imagePullSecrets: [{name: regcred}]\n"
		}
		return s + "  securityContext: {runAsNonRoot: true}\n" + extra + "  containers:\n  - {name: app, image: " + image + "}\n"
	}
	tests := []struct {
		name    string
		yaml    string
		display string
		message string   // the failed step's message, when it fails
		restsOn []string // substrings, each in some step's RestsOn
		warning string   // a substring of a step's warning
		detail  string   // a substring of the pull step's image config detail
	}{
		{name: "USER 1000 passes runAsNonRoot", yaml: pod(secret(password), nonRoot, ""), display: "Running",
			restsOn: []string{"image user: uid 1000, image config from " + nonRootSrc,
				"assumed: it keeps running (a server): the simulator cannot read `/server --serve`; image config from " + nonRootSrc},
			detail: "from " + nonRootSrc + `: entrypoint ["/server"], cmd ["--serve"], user 1000`},
		{name: "USER 0 fails as on a node", yaml: pod(secret(password), root, ""), display: "CreateContainerConfigError",
			message: `container has runAsNonRoot and image will run as root (pod: "p_default(u1)", container: app)`,
			restsOn: []string{"image user: uid 0, image config from " + rootSrc}},
		{name: "USER root (a name) fails as on a node", yaml: pod(secret(password), named, ""), display: "CreateContainerConfigError",
			message: "container has runAsNonRoot and image has non-numeric user (root), cannot verify user is non-root",
			restsOn: []string{`image user: username "root", image config from ` + namedSrc}},
		{name: "no USER is root", yaml: pod(secret(password), noUser, ""), display: "CreateContainerConfigError",
			message: "container has runAsNonRoot and image will run as root",
			restsOn: []string{"image user: none (no USER: root), image config from " + noUserSrc}},
		{name: "no USER, runAsUser decides: the entrypoint script runs", yaml: strings.Replace(pod(secret(password), noUser, "  restartPolicy: Never\n"),
			"{runAsNonRoot: true}", "{runAsNonRoot: true, runAsUser: 1000}", 1), display: "Error",
			restsOn: []string{"script: exits 5 after `exit 5`; image config from " + noUserSrc}},
		{name: "wrong password: ErrImagePull, as a node's pull", yaml: pod(secret("wrong-one"), nonRoot, ""), display: "ErrImagePull",
			message: "failed to resolve image: unexpected status from HEAD request to http://" + reg.Host + "/v2/team/nonroot/manifests/1.0: 401 Unauthorized"},
		{name: "no secret: pull access denied", yaml: pod("", nonRoot, ""), display: "ErrImagePull",
			message: "failed to resolve image: pull access denied, repository does not exist or may require authorization"},
		{name: "no such tag: not found", yaml: pod(secret(password), reg.Host+"/team/nonroot:9", ""), display: "ErrImagePull",
			message: "failed to resolve image: " + reg.Host + "/team/nonroot:9: not found"},
		{name: "a config that is none: a warning, the assumption", yaml: pod(secret(password), garbage, ""), display: "Running",
			warning: "the simulator could not read the config of " + garbage + " from its registry",
			restsOn: []string{"assumed: image user unknown", "assumed: the entrypoint of " + garbage + " keeps running"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond, ImageConfig: imageconfig.New(imageconfig.Options{})})
			e := runAll(t, parse(t, tt.yaml), c, testOptions(t))
			if got := e.PodState().Display; got != tt.display {
				f, _ := e.Failed()
				t.Fatalf("display = %s (%s: %s), want %s", got, f.Result.Reason, f.Result.Message, tt.display)
			}
			if f, failed := e.Failed(); tt.message != "" && (!failed || !strings.Contains(f.Result.Message, tt.message)) {
				t.Errorf("failed %t, message %q, want %q", failed, f.Result.Message, tt.message)
			}
			all := strings.Join(RestsOn(e.Steps()), "\n")
			for _, want := range tt.restsOn {
				if !strings.Contains(all, want) {
					t.Errorf("rests on:\n%s\nwant %q in it", all, want)
				}
			}
			var warnings, details []string
			for _, s := range e.Steps() {
				warnings = append(warnings, s.Result.Warnings...)
				for _, d := range s.Result.Details {
					if d.Key == "image config" {
						details = append(details, d.Value)
					}
				}
			}
			if w := strings.Join(warnings, "\n"); tt.warning != "" && strings.Count(w, "could not read the config") != 1 || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings:\n%s\nwant one with %q", w, tt.warning)
			}
			if d := strings.Join(details, "\n"); !strings.Contains(d, tt.detail) {
				t.Errorf("image config details:\n%s\nwant %q", d, tt.detail)
			}
			out, err := json.Marshal(e.Steps())
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{password, "wrong-one", base64.StdEncoding.EncodeToString([]byte(user + ":" + password))} {
				if strings.Contains(string(out), secret) {
					t.Errorf("the steps' JSON holds the secret %q", secret)
				}
			}
		})
	}
}

// TestSimulatedImageConfigHang: a registry that accepts and never answers
// costs the reader's timeout once, with one warning; the pod runs under the
// labelled assumption.
func TestSimulatedImageConfigHang(t *testing.T) {
	reg := imageconfigtest.New(t, "", "")
	reg.Push(t, "team/app", "1.0", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1000"}))
	reg.Hang()
	image := reg.Host + "/team/app:1.0"
	yaml := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: u1}\nspec:\n  securityContext: {runAsNonRoot: true}\n" +
		"  containers:\n  - {name: a, image: " + image + "}\n  - {name: b, image: " + image + ", imagePullPolicy: Always}\n"
	c := simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond, ImageConfig: imageconfig.New(imageconfig.Options{Timeout: 300 * time.Millisecond})})
	start := time.Now()
	e := runAll(t, parse(t, yaml), c, testOptions(t))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %s with a 300ms image config timeout", took)
	}
	if got := e.PodState().Display; got != "Running" {
		t.Fatalf("display = %s, want Running", got)
	}
	var warnings []string
	for _, s := range e.Steps() {
		warnings = append(warnings, s.Result.Warnings...)
	}
	w := strings.Join(warnings, "\n")
	if strings.Count(w, "the simulator could not read the config of "+image) != 1 || !strings.Contains(w, "did not answer within 300ms") {
		t.Errorf("warnings:\n%s\nwant one: the registry did not answer within 300ms", w)
	}
	if all := strings.Join(RestsOn(e.Steps()), "\n"); !strings.Contains(all, "assumed: image user unknown") {
		t.Errorf("rests on:\n%s\nwant the labelled assumption", all)
	}
}
