//go:build integration

package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountJSON is a CRI Mount of a recorded CreateContainer request.
type mountJSON struct {
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
	Readonly      bool   `json:"readonly"`
	Image         *struct {
		Image              string            `json:"image"`
		UserSpecifiedImage string            `json:"user_specified_image"`
		Annotations        map[string]string `json:"annotations"`
	} `json:"image"`
	ImageSubPath string `json:"image_sub_path"`
}

// createMounts are the mounts of the CreateContainer the step sent.
func createMounts(t *testing.T, r *result, step string) []mountJSON {
	t.Helper()
	s := r.step(step)
	if s == nil || s.call("CreateContainer") == nil {
		t.Fatalf("no CreateContainer in step %s\n%s", step, r)
	}
	var req struct {
		Config struct {
			Mounts []mountJSON `json:"mounts"`
		} `json:"config"`
	}
	if err := json.Unmarshal(s.call("CreateContainer").Request, &req); err != nil {
		t.Fatal(err)
	}
	return req.Config.Mounts
}

func methodsOf(s *stepEvent) []string {
	var out []string
	for _, c := range s.Calls {
		out = append(out, c.Method)
	}
	return out
}

// TestImageVolumes runs testdata/pods/image-volume.yaml (an image volume of
// busybox, mounted whole and with subPath var/www) through the binary. On
// containerd 2.x: the image-volumes step runs after the sandbox and before
// the container's image (getImageVolumes in SyncPod's lazyStart) and asks
// ImageStatus (IfNotPresent, present: no pull); CreateContainer's mounts
// carry the image (its ID, the reference as written) and no host path, the
// subPath as image_sub_path, read-only; and the container reads the image's
// file through both mounts and cannot write to them. On containerd 1.6,
// which predates CRI Mount.image, the kubelet's CreateContainer fails:
// the test asserts that failure, where it happens and that nothing is left.
func TestImageVolumes(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	if e.rt.major < 2 {
		r := e.run(t, d, e.pod("image-volume"))
		t.Logf("%s predates CRI Mount.image (containerd 2.1+): asserting the kubelet's failure", e.rt)
		if r.code != 1 || r.summary.Failure == nil {
			t.Fatalf("want exit 1 and a failure\n%s", r)
		}
		f := r.summary.Failure
		// 1.6 reads the mount as a bind mount of host_path "" (Mount.image is
		// a field it does not know).
		if f.Step != "create/app" || f.Reason != "CreateContainerError" || !strings.Contains(f.Message, `failed to mkdir ""`) {
			t.Errorf("failure = %+v, want create/app CreateContainerError: ... failed to mkdir \"\" ...\n%s", f, r)
		}
		if v := valueOf(r.step("create/app"), "image volumes"); !strings.Contains(v, "predates CRI Mount.image") {
			t.Errorf("create/app detail \"image volumes\" = %q, want the explanation", v)
		}
		t.Logf("containerd 1.6 answers: %s", f.Message)
		if s := r.step("image-volumes"); s == nil || s.State != "done" {
			t.Errorf("the image-volumes step did not succeed (the pull works on 1.6; the mount does not)\n%s", r)
		}
		e.assertNothingLeft(t, d, "default", "image-volume", r.summary.UID)
		return
	}
	r := e.mustRun(t, d, e.pod("image-volume"), "--keep")
	t.Cleanup(func() { e.cleanup(t) })
	var order []string
	for _, s := range r.steps {
		order = append(order, s.Name)
	}
	if got := strings.Join(order, " "); !strings.Contains(got, "sandbox-status image-volumes pull/app create/app") {
		t.Errorf("steps %s: want image-volumes between sandbox-status and pull/app", got)
	}
	if m := methodsOf(r.step("image-volumes")); strings.Join(m, ",") != "ImageStatus" {
		t.Errorf("image-volumes calls %v, want ImageStatus only (IfNotPresent, image present)", m)
	}
	const ref = "docker.io/library/busybox:1.35"
	var whole, sub *mountJSON
	for _, m := range createMounts(t, r, "create/app") {
		switch m.ContainerPath {
		case "/image":
			whole = &m
		case "/www":
			sub = &m
		}
	}
	for _, c := range []struct {
		m       *mountJSON
		path    string
		subPath string
	}{{whole, "/image", ""}, {sub, "/www", "var/www"}} {
		m := c.m
		if m == nil {
			t.Errorf("no mount at %s", c.path)
			continue
		}
		if m.Image == nil || !strings.HasPrefix(m.Image.Image, "sha256:") || m.Image.UserSpecifiedImage != ref || m.HostPath != "" || !m.Readonly || m.ImageSubPath != c.subPath {
			t.Errorf("mount %s = %+v (image %+v), want image sha256:… from %s, no host path, read-only, image_sub_path %q", c.path, *m, m.Image, ref, c.subPath)
		}
	}
	c := dialCRI(t, e.endpoint)
	app := c.running(t, r.summary.UID, "app")
	for _, f := range []string{"/image/var/www/index.html", "/www/index.html"} {
		if got := strings.TrimSpace(c.exec(t, app.Id, "cat", f)); got != "podstep harness" {
			t.Errorf("cat %s in the container = %q, want the image's file (podstep harness)", f, got)
		}
	}
	if code, _, stderr := c.execResult(t, app.Id, "touch", "/image/new"); code == 0 || !strings.Contains(stderr, "Read-only file system") {
		t.Errorf("touch /image/new: exit %d, %q; want Read-only file system", code, stderr)
	}
}

// TestImageVolumePullSecrets: an image volume of the harness registry's
// private image, pullPolicy Always. With the pod's pull secret the
// image-volumes step pulls it with the secret's credentials (ImageStatus,
// PullImage, ImageStatus for the size) and the container reads the image's
// file; without, the pull is refused: ErrImagePull at image-volumes, and the
// container that mounts the volume waits with ErrImagePull. The password
// never shows. On containerd 1.6 the pull with the secret works the same,
// and the create then fails (see TestImageVolumes).
func TestImageVolumePullSecrets(t *testing.T) {
	e, reg := setupRegistry(t)
	for _, withSecret := range []bool{true, false} {
		name := map[bool]string{true: "with the pull secret", false: "without a pull secret"}[withSecret]
		t.Run(name, func(t *testing.T) {
			freshImage(t, e, reg)
			m, secrets := writeImageVolumeManifest(t, reg, withSecret)
			d := newDirs(t)
			args := []string{}
			if withSecret && e.rt.major >= 2 {
				args = append(args, "--keep") // the container's log stays for the check below
				t.Cleanup(func() { e.cleanup(t) })
			}
			r := e.run(t, d, m, args...)
			assertNoSecret(t, "stdout", r.stdout, secrets)
			assertNoSecret(t, "stderr", r.stderr, secrets)
			s := r.step("image-volumes")
			if s == nil {
				t.Fatalf("no image-volumes step\n%s", r)
			}
			if !withSecret {
				if r.code != 1 || r.summary.Failure == nil || r.summary.Failure.Step != "image-volumes" || r.summary.Failure.Reason != "ErrImagePull" {
					t.Fatalf("want exit 1, failure image-volumes ErrImagePull\n%s", r)
				}
				if !pullDenied(t, e.rt, reg, false).MatchString(r.summary.Failure.Message) {
					t.Errorf("failure message %q, want the registry's refusal", r.summary.Failure.Message)
				}
				var waiting string
				for _, cs := range r.summary.Status.ContainerStatuses {
					if cs.Name == "app" && cs.State.Waiting != nil {
						waiting = cs.State.Waiting.Reason
					}
				}
				if waiting != "ErrImagePull" {
					t.Errorf("app waiting %q, want ErrImagePull (it mounts the volume)", waiting)
				}
				e.assertNothingLeft(t, d, "default", "image-volume-private", r.summary.UID)
				return
			}
			if m := methodsOf(s); strings.Join(m, ",") != "ImageStatus,PullImage,ImageStatus" {
				t.Errorf("image-volumes calls %v, want ImageStatus, PullImage, ImageStatus (pull policy Always)", m)
			}
			var pull struct {
				Auth pullAuth `json:"auth"`
			}
			if err := json.Unmarshal(s.call("PullImage").Request, &pull); err != nil {
				t.Fatal(err)
			}
			if pull.Auth.Username != reg.user || pull.Auth.Password != "<redacted>" {
				t.Errorf("PullImage auth %+v, want user %s and the password redacted", pull.Auth, reg.user)
			}
			if e.rt.major < 2 {
				t.Logf("%s: the pull with the secret works; the mount then fails (no CRI Mount.image)", e.rt)
				if f := r.summary.Failure; r.code != 1 || f == nil || f.Step != "create/app" || !strings.Contains(f.Message, `failed to mkdir ""`) {
					t.Errorf("want exit 1 at create/app with containerd 1.6's mkdir \"\" error\n%s", r)
				}
				e.assertNothingLeft(t, d, "default", "image-volume-private", r.summary.UID)
				return
			}
			if r.code != 0 {
				t.Fatalf("want exit 0\n%s", r)
			}
			// The container printed the image's file (read through the volume).
			waitForLog(t, filepath.Join(d.podLogDir("default", "image-volume-private", r.summary.UID), "app", "0.log"), "podstep harness")
		})
	}
}

// writeImageVolumeManifest writes a pod whose image volume is the
// registry's image, with (or without) the pull secret for it.
func writeImageVolumeManifest(t *testing.T, reg registry, withSecret bool) (string, []string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + reg.password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{reg.addr: map[string]string{"username": reg.user, "password": reg.password, "auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	data := base64.StdEncoding.EncodeToString(cfg)
	var b strings.Builder
	if withSecret {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s\n---\n", data)
	}
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: image-volume-private}\nspec:\n")
	if withSecret {
		b.WriteString("  imagePullSecrets: [{name: regcred}]\n")
	}
	fmt.Fprintf(&b, `  restartPolicy: Never
  volumes:
  - name: private
    image: {reference: %q, pullPolicy: Always}
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["cat", "/private/var/www/index.html"]
    volumeMounts: [{name: private, mountPath: /private}]
`, reg.image)
	path := filepath.Join(t.TempDir(), "image-volume-private.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, []string{reg.password, auth, data}
}
