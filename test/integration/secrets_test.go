//go:build integration

package integration

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// expansionSecrets are the Secret values of testdata/pods/secrets-expansion.yaml
// (the DB password, the short pin, the envFrom token, an unused Secret's
// value), each with its base64.
func expansionSecrets() []string {
	var out []string
	for _, v := range []string{"Pg-Pa55word-Xk39q", "xQ!9", "tok-7Hq2-Lm9W-pp31", "Unused-Secret-Zr71"} {
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// TestSecretsExpansionOnContainerd runs testdata/pods/secrets-expansion.yaml
// on containerd, in JSON and in text. The container compares what it got
// (env, envFrom, $(VAR) in args and in DSN, the subPathExpr mount) with
// the Secret volumes, and its postStart hook prints the token and DSN and
// fails unless those checks passed. The pod must run with the hook's
// "checks-ok", while no output shows a Secret value: the CreateContainer
// request shows them masked in their part only, and the hook's output too.
func TestSecretsExpansionOnContainerd(t *testing.T) {
	e := setup(t)
	file := e.pod("secrets-expansion")

	t.Run("json", func(t *testing.T) {
		r := e.mustRun(t, newDirs(t), file)
		assertNoSecret(t, "run -o json stdout", r.stdout, expansionSecrets())
		assertNoSecret(t, "run -o json stderr", r.stderr, expansionSecrets())

		hook := r.step("post-start/app")
		if hook == nil {
			t.Fatalf("no post-start/app step\n%s", r)
		}
		out, _ := hook.detailValue("output")
		if want := "hook sees token <redacted> and dsn postgres://u:<redacted>@db\nchecks-ok"; !strings.Contains(out, want) {
			t.Errorf("hook output = %q, want it to hold %q (checks-ok: the container got every value right)", out, want)
		}

		create := r.step("create/app")
		if create == nil {
			t.Fatalf("no create/app step\n%s", r)
		}
		var req struct {
			Config struct {
				Args []string `json:"args"`
				Envs []struct {
					Key   string `json:"key"`
					Value string `json:"value"` // podstep renders env values as text
				} `json:"envs"`
				Mounts []struct {
					ContainerPath string `json:"container_path"`
					HostPath      string `json:"host_path"`
				} `json:"mounts"`
			} `json:"config"`
		}
		for _, c := range create.Calls {
			if c.Method == "CreateContainer" {
				if err := json.Unmarshal(c.Request, &req); err != nil {
					t.Fatalf("CreateContainer request: %v", err)
				}
			}
		}
		if got := strings.Join(req.Config.Args, " "); got != "checks <redacted> --pin=<redacted>" {
			t.Errorf("CreateContainer args = %q, want the Secret parts masked only", got)
		}
		env := map[string]string{}
		for _, kv := range req.Config.Envs {
			env[kv.Key] = string(kv.Value)
		}
		for k, want := range map[string]string{"DB_PASSWORD": "<redacted>", "PIN": "<redacted>", "API_TOKEN": "<redacted>", "DSN": "postgres://u:<redacted>@db"} {
			if env[k] != want {
				t.Errorf("CreateContainer env %s = %q, want %q", k, env[k], want)
			}
		}
		// The subPathExpr mount: a bind mount under volume-subpaths as root
		// (the kubelet's), else <volume>/<subPath>, masked.
		found := false
		for _, m := range req.Config.Mounts {
			if m.ContainerPath == "/by-pin" {
				found = true
				if !strings.Contains(m.HostPath, "/volume-subpaths/") && !strings.HasSuffix(m.HostPath, "/scratch/<redacted>") {
					t.Errorf("the subPathExpr mount's host path = %q, want a volume-subpaths bind mount or one ending in /scratch/<redacted>", m.HostPath)
				}
			}
		}
		if !found {
			t.Errorf("no /by-pin mount in the CreateContainer request")
		}
		if v, _ := create.detailValue("subPath"); !strings.Contains(v, `(scratch, subPath "<redacted>")`) || !strings.Contains(v, "/scratch/<redacted> ") {
			t.Errorf("the create step's subPath detail = %q, want the expanded subPathExpr masked", v)
		}
	})

	t.Run("text", func(t *testing.T) {
		d := newDirs(t)
		r := e.podstep(t, "run", "--auto", "-f", file, "-r", e.endpoint, "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
		if r.code != 0 || !strings.Contains(r.stdout, "STATUS Running") {
			t.Fatalf("want exit 0 and STATUS Running\n%s", r)
		}
		if !strings.Contains(r.stdout, "output: hook sees token <redacted> and dsn postgres://u:<redacted>@db") {
			t.Errorf("the hook's output is not shown masked\n%s", r)
		}
		assertNoSecret(t, "run stdout", r.stdout, expansionSecrets())
		assertNoSecret(t, "run stderr", r.stderr, expansionSecrets())
	})
}

// TestRuntimeErrorHidesSecret: a container whose command is $(DB_PASSWORD)
// makes containerd's StartContainer fail with an error that quotes the
// expanded command (exec: "<the password>": executable file not found).
// The failure is reported (RunContainerError, exit 1) with the value
// masked, in the step, the recorded call, the pod's status and events, the
// error line and stderr.
func TestRuntimeErrorHidesSecret(t *testing.T) {
	e := setup(t)
	const password = "Exec-Pa55word-Qm27v"
	manifest := `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: ` + password + `
---
apiVersion: v1
kind: Pod
metadata:
  name: secret-command
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["$(DB_PASSWORD)"]
    env:
    - name: DB_PASSWORD
      valueFrom:
        secretKeyRef:
          name: db
          key: password
`
	file := filepath.Join(t.TempDir(), "secret-command.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	forbidden := []string{password, base64.StdEncoding.EncodeToString([]byte(password))}

	r := e.run(t, newDirs(t), file)
	if r.code != 1 || r.summary.Failure == nil || r.summary.Failure.Reason != "RunContainerError" {
		t.Fatalf("want exit 1 with RunContainerError\n%s", r)
	}
	if !strings.Contains(r.summary.Failure.Message, `"<redacted>"`) {
		t.Errorf("the failure message %q does not show the masked command", r.summary.Failure.Message)
	}
	assertNoSecret(t, "run -o json stdout", r.stdout, forbidden)
	assertNoSecret(t, "run -o json stderr", r.stderr, forbidden)

	d := newDirs(t)
	txt := e.podstep(t, "run", "--auto", "-f", file, "-r", e.endpoint, "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if txt.code != 1 || !strings.Contains(txt.stdout, "RunContainerError") {
		t.Fatalf("want exit 1 with RunContainerError\n%s", txt)
	}
	assertNoSecret(t, "run stdout", txt.stdout, forbidden)
	assertNoSecret(t, "run stderr", txt.stderr, forbidden)
}
