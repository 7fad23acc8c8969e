//go:build integration

package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

// registry is the harness's private registry (hack/containerd-up.sh): an
// htpasswd-protected docker-registry on loopback holding one image.
//
// Environment (set by hack/test.sh from the harness's output):
//
//	PODSTEP_REGISTRY           host:port, e.g. 127.0.0.1:5055
//	PODSTEP_REGISTRY_USER      the user it accepts
//	PODSTEP_REGISTRY_PASSWORD  that user's password
//	PODSTEP_REGISTRY_IMAGE     the image it holds (default $PODSTEP_REGISTRY/podstep/private-busybox:1.0)
type registry struct {
	addr, user, password, image string
}

// setupRegistry is setup plus the registry: missing PODSTEP_REGISTRY* skips
// the test loudly, and fails it under CI=true.
func setupRegistry(t *testing.T) (*env, registry) {
	t.Helper()
	e := setup(t)
	v := testenv.Require(t, "REGISTRY", "run `bash hack/test.sh` as root: hack/containerd-up.sh starts the registry and prints them",
		"PODSTEP_REGISTRY", "PODSTEP_REGISTRY_USER", "PODSTEP_REGISTRY_PASSWORD")
	r := registry{addr: v[0], user: v[1], password: v[2], image: os.Getenv("PODSTEP_REGISTRY_IMAGE")}
	if r.image == "" {
		r.image = r.addr + "/podstep/private-busybox:1.0"
	}
	if !strings.HasPrefix(r.image, r.addr+"/") {
		t.Fatalf("PODSTEP_REGISTRY_IMAGE %q is not on PODSTEP_REGISTRY %q", r.image, r.addr)
	}
	return e, r
}

// pullCase is one pod pulling the registry's image.
type pullCase struct {
	name string
	// secret: the pod's manifest has a kubernetes.io/dockerconfigjson Secret
	// "regcred" with one auths entry: key → user/password. No Secret when key is "".
	key, user, password string
	// refSecret: the pod names regcred in imagePullSecrets.
	refSecret bool
	policy    string // imagePullPolicy
}

// pullManifest is a written manifest and the strings its Secret holds that
// must never show in podstep's output.
type pullManifest struct {
	path string
	// secrets: the password, the auth value base64(user:password), and the
	// Secret's .dockerconfigjson as base64 (how a leaked Secret.Data would
	// print in JSON).
	secrets []string
}

// writePullManifest writes c as a manifest in a temp dir: the Secret (as
// `kubectl create secret docker-registry` makes it: data, base64) and the
// pod "private-pull" running the registry's image.
func writePullManifest(t *testing.T, r registry, c pullCase) pullManifest {
	t.Helper()
	var b strings.Builder
	m := pullManifest{path: filepath.Join(t.TempDir(), "private-pull.yaml")}
	if c.key != "" {
		auth := base64.StdEncoding.EncodeToString([]byte(c.user + ":" + c.password))
		cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
			c.key: map[string]string{"username": c.user, "password": c.password, "auth": auth},
		}})
		if err != nil {
			t.Fatal(err)
		}
		data := base64.StdEncoding.EncodeToString(cfg)
		m.secrets = []string{c.password, auth, data}
		fmt.Fprintf(&b, `apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
---
`, data)
	}
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: private-pull
spec:
`)
	if c.refSecret {
		b.WriteString("  imagePullSecrets:\n  - name: regcred\n")
	}
	fmt.Fprintf(&b, `  containers:
  - name: app
    image: %s
    imagePullPolicy: %s
    command: ["sh", "-c", "sleep 3600"]
`, r.image, c.policy)
	if err := os.WriteFile(m.path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

// assertNoSecret fails for each secret string found in the named output.
// (The callers check elsewhere that the output is the one they expect.)
func assertNoSecret(t *testing.T, what, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			i := strings.Index(out, s)
			lo, hi := max(0, i-120), min(len(out), i+len(s)+40)
			t.Errorf("%s contains the secret %q: …%s…", what, s, out[lo:hi])
		}
	}
}

// freshImage removes the registry's image from the runtime, so that the
// next run has to pull it.
func freshImage(t *testing.T, e *env, r registry) {
	t.Helper()
	dialCRI(t, e.endpoint).removeImage(t, r.image)
}

// detailValue returns the value of the step's detail with this key.
func (s *stepEvent) detailValue(key string) (string, bool) {
	for _, d := range s.Details {
		if d.Key == key {
			return d.Value, true
		}
	}
	return "", false
}

// call returns the step's CRI call to method, or nil.
func (s *stepEvent) call(method string) *callJSON {
	for i := range s.Calls {
		if s.Calls[i].Method == method {
			return &s.Calls[i]
		}
	}
	return nil
}

// pullAuth is the auth of a recorded PullImage request.
type pullAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	ServerAddress string `json:"server_address"`
}

// pullDenied is the runtime's error for a pull of the registry's image that
// the registry refuses (401: resolving the tag is the first authenticated
// request), as podstep must pass it on. authSent: the PullImage request
// carried credentials (wrong ones).
func pullDenied(t *testing.T, rt runtimeUnderTest, reg registry, authSent bool) *regexp.Regexp {
	t.Helper()
	prefix := `failed to pull and unpack image "` + regexp.QuoteMeta(reg.image) + `": `
	var words string
	switch {
	case rt.major == 1:
		// containerd 1.6: the same words with or without credentials.
		words = `failed to resolve reference "` + regexp.QuoteMeta(reg.image) + `": pulling from host ` +
			regexp.QuoteMeta(reg.addr) + ` failed with status code \[manifests [^\]]+\]: 401 Unauthorized`
	case rt.major == 2 && authSent:
		// containerd 2.x (its transfer-service pull): the HEAD of the manifest
		// answered 401 to the credentials.
		repo, tag, _ := strings.Cut(strings.TrimPrefix(reg.image, reg.addr+"/"), ":")
		words = `failed to resolve image: unexpected status from HEAD request to ` +
			regexp.QuoteMeta("http://"+reg.addr+"/v2/"+repo+"/manifests/"+tag) + `: 401 Unauthorized`
	case rt.major == 2:
		// containerd 2.x with no credentials for the registry's challenge.
		words = `failed to resolve image: pull access denied, repository does not exist or may require authorization: ` +
			`authorization failed: no basic auth credentials`
	default:
		t.Fatalf("no expected pull error for runtime %s", rt)
	}
	t.Logf("%s: a refused pull (credentials sent: %t) must fail with: %s", rt, authSent, words)
	return regexp.MustCompile(prefix + words)
}

// TestPullSecrets pulls the registry's image (removed from containerd
// first) with the right secret, a wrong password, no pull secret, and a
// secret for another registry. The pull either succeeds with the Secret's
// credentials (shown masked) or fails with the registry's 401 in the
// runtime's words (pullDenied: containerd 1.6 and 2.x word it differently),
// and the Secret's password shows in no output (JSON, text, stderr).
func TestPullSecrets(t *testing.T) {
	e, reg := setupRegistry(t)
	masked := fmt.Sprintf(`secret regcred, registry %q, user %s, password (set)`, reg.addr, reg.user)
	for _, tc := range []struct {
		pullCase
		ok bool
		// secrets: the pull-secrets step's summary and its detail for the image
		summary, imageDetail string
		// auth: the username of the PullImage request ("": no auth sent)
		authUser string
	}{
		{
			pullCase: pullCase{name: "right secret IfNotPresent", key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "IfNotPresent"},
			ok:       true, summary: "1 secret found; credentials matched for 1 of 1 image", imageDetail: masked, authUser: reg.user,
		},
		{
			pullCase: pullCase{name: "right secret Always", key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "Always"},
			ok:       true, summary: "1 secret found; credentials matched for 1 of 1 image", imageDetail: masked, authUser: reg.user,
		},
		{
			pullCase: pullCase{name: "wrong password", key: reg.addr, user: reg.user, password: "Wrong-" + reg.password + "-Pw", refSecret: true, policy: "Always"},
			summary:  "1 secret found; credentials matched for 1 of 1 image", imageDetail: masked, authUser: reg.user,
		},
		{
			pullCase: pullCase{name: "no pull secret", key: reg.addr, user: reg.user, password: reg.password, refSecret: false, policy: "IfNotPresent"},
			summary:  "the pod names no image pull secrets",
		},
		{
			pullCase: pullCase{name: "secret for another registry", key: "other.example:5000", user: reg.user, password: reg.password, refSecret: true, policy: "Always"},
			summary:  "1 secret found; credentials matched for 0 of 1 image (no credentials matched for 1: pulled anonymously)", imageDetail: "no credentials matched; pulled anonymously",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := writePullManifest(t, reg, tc.pullCase)
			var unauthorized *regexp.Regexp
			if !tc.ok {
				unauthorized = pullDenied(t, e.rt, reg, tc.authUser != "")
			}
			// the harness password must not show either, whatever the Secret says
			secrets := append(slices.Clone(m.secrets), reg.password) // a copy: m.secrets stays as written
			c := dialCRI(t, e.endpoint)

			// JSON: what was sent and what came back
			freshImage(t, e, reg)
			d := newDirs(t)
			r := e.run(t, d, m.path)
			wantCode := 1
			if tc.ok {
				wantCode = 0
			}
			if r.code != wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, wantCode, r)
			}
			ps := r.step("pull-secrets")
			pull := r.step("pull/app")
			if ps == nil || pull == nil {
				t.Fatalf("no pull-secrets or pull/app step\n%s", r)
			}
			if ps.ID >= pull.ID {
				t.Errorf("pull-secrets is step %d, pull/app step %d: the credentials must be resolved before the pull", ps.ID, pull.ID)
			}
			if ps.Summary != tc.summary {
				t.Errorf("pull-secrets summary %q, want %q", ps.Summary, tc.summary)
			}
			got, found := ps.detailValue(reg.image)
			switch {
			case tc.imageDetail == "" && found:
				t.Errorf("pull-secrets detail %s = %q, want none (no pull secrets)", reg.image, got)
			case tc.imageDetail != "" && got != tc.imageDetail:
				t.Errorf("pull-secrets detail %s = %q, want %q\ndetails: %+v", reg.image, got, tc.imageDetail, ps.Details)
			}
			if tc.refSecret {
				if v, _ := ps.detailValue("secret regcred"); v != "found (kubernetes.io/dockerconfigjson)" {
					t.Errorf("pull-secrets detail `secret regcred` = %q, want found (kubernetes.io/dockerconfigjson)", v)
				}
			}
			// the detail (e.g. "no credentials matched") is on the stream
			// before the pull is sent
			if tc.imageDetail != "" {
				q, _ := json.Marshal(tc.imageDetail) // as the stream encodes it
				at, pullAt := strings.Index(r.stdout, string(q)), strings.Index(r.stdout, `"method":"PullImage"`)
				if at < 0 || pullAt < 0 || at > pullAt {
					t.Errorf("%q at offset %d of the JSON stream, the PullImage call at %d: want it before", tc.imageDetail, at, pullAt)
				}
			}

			call := pull.call("PullImage")
			if call == nil {
				t.Fatalf("pull/app sent no PullImage (image removed first)\n%s", r)
			}
			t.Logf("PullImage: %s in %.1f ms", call.Code, call.DurationMs)
			var req struct {
				Auth *pullAuth `json:"auth"`
			}
			if err := json.Unmarshal(call.Request, &req); err != nil {
				t.Fatalf("PullImage request %s: %v", call.Request, err)
			}
			switch {
			case tc.authUser == "" && req.Auth != nil:
				t.Errorf("PullImage sent auth %+v, want none", *req.Auth)
			case tc.authUser != "" && req.Auth == nil:
				t.Errorf("PullImage sent no auth, want user %s", tc.authUser)
			case tc.authUser != "":
				// as the kubelet: username and password only, no server address
				// (containerd 1.6 rejects a bare host:port there)
				want := pullAuth{Username: tc.authUser, Password: "<redacted>"}
				if *req.Auth != want {
					t.Errorf("PullImage auth as recorded = %+v, want %+v", *req.Auth, want)
				}
			}

			if tc.ok {
				if call.Code != "OK" {
					t.Errorf("PullImage code %s (%s), want OK", call.Code, call.Error)
				}
				if r.summary.Outcome != "running" {
					t.Errorf("outcome %q, want running", r.summary.Outcome)
				}
				img := c.imageStatus(t, reg.image)
				if img == nil {
					t.Fatalf("ImageStatus %s: absent after a successful run", reg.image)
				}
				if !strings.Contains(pull.Summary, img.Id[:19]) {
					t.Errorf("pull/app summary %q does not name the image ID %s", pull.Summary, img.Id)
				}
			} else {
				f := r.summary.Failure
				if f == nil {
					t.Fatalf("no failure in the summary\n%s", r)
				}
				if f.Reason != "ErrImagePull" || f.Stage != "containers" || f.Step != "pull/app" {
					t.Errorf("failure %s/%s %s, want containers/pull/app ErrImagePull", f.Stage, f.Step, f.Reason)
				}
				if !unauthorized.MatchString(f.Message) {
					t.Errorf("failure message %q\nwant it to match %s", f.Message, unauthorized)
				}
				if call.Code != "Unknown" || !unauthorized.MatchString(call.Error) {
					t.Errorf("PullImage code %s error %q, want Unknown and the 401", call.Code, call.Error)
				}
				if r.summary.Display != "ErrImagePull" {
					t.Errorf("summary.display %q, want ErrImagePull", r.summary.Display)
				}
				if img := c.imageStatus(t, reg.image); img != nil {
					t.Errorf("ImageStatus %s: present (%s) after a failed pull", reg.image, img.Id)
				}
			}
			assertNoSecret(t, "stdout (-o json)", r.stdout, secrets)
			assertNoSecret(t, "stderr (-o json)", r.stderr, secrets)
			e.assertNothingLeft(t, d, "default", "private-pull", r.summary.UID)

			// text, as a user types it
			freshImage(t, e, reg)
			d = newDirs(t)
			txt := e.podstep(t, "run", "--auto", "-f", m.path, "-r", e.endpoint, "--grace-period", "0",
				"--root-dir", d.root, "--log-dir", d.logs)
			if txt.code != wantCode {
				t.Fatalf("text: exit %d, want %d\n%s", txt.code, wantCode, txt)
			}
			if !regexp.MustCompile(`(?m)^✓ +\d+ pull-secrets +` + regexp.QuoteMeta(tc.summary)).MatchString(txt.stdout) {
				t.Errorf("text: no `✓ N pull-secrets %s` line\n%s", tc.summary, txt)
			}
			if tc.ok {
				if !strings.Contains(txt.stdout, "pulled "+reg.image+" → sha256:") || !strings.Contains(txt.stdout, "STATUS Running") {
					t.Errorf("text: want `pulled %s → sha256:…` and STATUS Running\n%s", reg.image, txt)
				}
			} else {
				// (text output: the error is the last line of stdout)
				if !regexp.MustCompile(`(?m)^error: stage containers, step pull/app: ErrImagePull: ` + unauthorized.String() + `$`).MatchString(txt.stdout) {
					t.Errorf("text: stdout lacks `error: stage containers, step pull/app: ErrImagePull: …401 Unauthorized`\n%s", txt)
				}
				wantCred := "credentials: " + tc.imageDetail
				if tc.imageDetail == "" {
					wantCred = "" // no pull secrets: no credentials line
				} else if strings.HasPrefix(tc.imageDetail, "no credentials matched") {
					wantCred = "credentials: no credentials matched"
				}
				if wantCred != "" && !strings.Contains(txt.stdout, wantCred) {
					t.Errorf("text: the failed pull's details lack %q\n%s", wantCred, txt)
				}
				if wantCred == "" && strings.Contains(txt.stdout, "credentials:") {
					t.Errorf("text: a credentials line with no pull secrets\n%s", txt)
				}
			}
			assertNoSecret(t, "stdout (text)", txt.stdout, secrets)
			assertNoSecret(t, "stderr (text)", txt.stderr, secrets)
			assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
		})
	}
}

// TestPullSecretNotInPlan: `podstep plan` (YAML, JSON, and the crictl files)
// of a pod with the right pull secret shows the pull but not the Secret's
// password, auth or data.
func TestPullSecretNotInPlan(t *testing.T) {
	e, reg := setupRegistry(t)
	m := writePullManifest(t, reg, pullCase{key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "Always"})
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			// --output=: e.podstep parses `-o json` as a run's JSON stream
			r := e.podstep(t, "plan", "-f", m.path, "--output="+format)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0\n%s", r.code, r)
			}
			for _, want := range []string{"PullImage", reg.image, "pull-secrets"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("plan lacks %q\n%s", want, r)
				}
			}
			assertNoSecret(t, "plan -o "+format, r.stdout, m.secrets)
			assertNoSecret(t, "plan -o "+format+" stderr", r.stderr, m.secrets)
		})
	}
	t.Run("crictl", func(t *testing.T) {
		dir := t.TempDir()
		r := e.podstep(t, "plan", "-f", m.path, "--crictl", dir)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0\n%s", r.code, r)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) < 2 {
			t.Fatalf("--crictl %s wrote %v, want pod-config.json and app-container-config.json", dir, files)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecret(t, filepath.Base(f), string(b), m.secrets)
		}
		assertNoSecret(t, "plan --crictl stdout+stderr", r.stdout+r.stderr, m.secrets)
	})
}

// TestPullSecretNotInTUI steps through the pod with the right pull secret in
// the TUI (tmux, 200x60), one key per step, and looks at every frame: the
// pull-secrets step shows the secret and registry with the password masked,
// the pull step shows PullImage with `password: <redacted>`, and no frame
// shows the password, the auth value or the Secret's data.
func TestPullSecretNotInTUI(t *testing.T) {
	e, reg := setupRegistry(t)
	m := writePullManifest(t, reg, pullCase{key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "Always"})
	freshImage(t, e, reg)
	d := newDirs(t)
	tui := startTUI(t, "podstep-tui-secret-it", 200, 60, e.bin, "run", "-f", m.path, "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", d.root, "--log-dir", d.logs)
	waitFor, key := tui.waitFor, tui.key
	planCount := regexp.MustCompile(`plan 0/(\d+)`)
	first := waitFor("the first screen", func(f string) bool { return planCount.MatchString(f) })
	total, _ := strconv.Atoi(planCount.FindStringSubmatch(first)[1])
	if total < 10 {
		t.Fatalf("the plan has %d steps, want at least 10 (admit … start/app):\n%s", total, first)
	}
	var secretsFrame, pullFrame string
	for n := 1; n <= total; n++ {
		key("n")
		f := waitFor(fmt.Sprintf("step %d to finish", n), func(f string) bool {
			return strings.Contains(f, fmt.Sprintf("plan %d/%d", n, total))
		})
		switch {
		case strings.Contains(f, "[pull-secrets]"):
			secretsFrame = f
		case strings.Contains(f, "[pull/app]"):
			pullFrame = f
			// the other views of the pull step (request · response · log)
			for i := 0; i < 3; i++ {
				key("Tab")
				time.Sleep(200 * time.Millisecond)
				tui.frames = append(tui.frames, tui.capture())
			}
		}
	}
	waitFor("the pod to run", func(f string) bool { return strings.Contains(f, "Running") })
	tui.quitWithTeardown()
	frames := tui.frames

	if !strings.Contains(secretsFrame, "secret regcred") || !strings.Contains(secretsFrame, fmt.Sprintf("registry %q, user %s, password (set)", reg.addr, reg.user)) {
		t.Errorf("the pull-secrets frame does not show the secret, registry and masked password:\n%s", secretsFrame)
	}
	if !regexp.MustCompile(`PullImage → OK`).MatchString(pullFrame) || !strings.Contains(pullFrame, "password: <redacted>") {
		t.Errorf("the pull/app frame does not show PullImage OK with `password: <redacted>`:\n%s", pullFrame)
	}
	for i, f := range frames {
		assertNoSecret(t, fmt.Sprintf("TUI frame %d", i), f, append(m.secrets, reg.password))
	}
	t.Logf("checked %d frames", len(frames))
	if c := dialCRI(t, e.endpoint); len(c.managedSandboxes(t)) != 0 {
		t.Errorf("sandboxes left after quitting the TUI with teardown")
	}
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
}
