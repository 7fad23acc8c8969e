package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Secret values of testdata/pods/secrets-expansion.yaml: the DB
// password, the short pin (below cri.MinSubstringLen), the envFrom token,
// and a Secret the pod does not use.
var expansionSecrets = []string{"Pg-Pa55word-Xk39q", "xQ!9", "tok-7Hq2-Lm9W-pp31", "Unused-Secret-Zr71"}

// secretForms are the strings no output may hold: each value and its
// base64 (CRI env values are bytes, which protobuf JSON prints in base64).
func secretForms(values ...string) []string {
	var out []string
	for _, v := range values {
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// assertNoSecrets fails for every output that holds a forbidden string.
func assertNoSecrets(t *testing.T, outputs map[string]string, forbidden []string) {
	t.Helper()
	for name, out := range outputs {
		for _, s := range forbidden {
			if i := strings.Index(out, s); i >= 0 {
				t.Errorf("%s shows the secret %q: …%s…", name, s, out[max(0, i-80):min(len(out), i+len(s)+40)])
			}
		}
	}
}

// TestSecretsNeverShown runs testdata/pods/secrets-expansion.yaml, whose
// Secret values reach the container through env, envFrom, $(VAR) in args
// and in another env var, a subPathExpr and a postStart hook that prints
// them, through every output: plan (yaml, json, --crictl files and notes)
// and run --auto (text, json) on the simulated runtime, stdout and stderr.
// No value shows, in clear or base64, and the places they went show
// <redacted> in their part only.
func TestSecretsNeverShown(t *testing.T) {
	const file = "../../testdata/pods/secrets-expansion.yaml"
	crictl := t.TempDir()
	root, logs := dirs(t)
	outputs := map[string]string{}
	for name, args := range map[string][]string{
		"plan -o yaml":    {"plan", "-f", file},
		"plan -o json":    {"plan", "-o", "json", "-f", file},
		"plan --crictl":   {"plan", "--crictl", crictl, "-f", file},
		"run --auto":      {"run", "--auto", "--sim", "--no-color", "--grace-period", "0", "-f", file, "--root-dir", root, "--log-dir", logs},
		"run --auto json": {"run", "--auto", "--sim", "-o", "json", "--grace-period", "0", "-f", file, "--root-dir", root, "--log-dir", logs},
	} {
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", name, code, stderr, stdout)
		}
		outputs[name], outputs[name+" (stderr)"] = stdout, stderr
	}
	files, _ := filepath.Glob(filepath.Join(crictl, "*.json"))
	if len(files) != 3 {
		t.Fatalf("--crictl wrote %v, want pod-config.json and two container configs", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		outputs["--crictl "+filepath.Base(f)] = string(b)
	}
	assertNoSecrets(t, outputs, secretForms(expansionSecrets...))

	for _, w := range []struct{ output, want string }{
		{"plan -o yaml", "- --pin=<redacted>"},
		// Env values are text (cri-api v0.37 made them bytes, base64 in protojson).
		{"plan -o yaml", "value: postgres://u:<redacted>@db"},
		{"plan -o json", `"value":"postgres://u:\u003credacted\u003e@db"`},
		// cri-api's KeyValue.MarshalJSON writes text too, which crictl reads back.
		{"--crictl app-container-config.json", `"value": "postgres://u:\u003credacted\u003e@db"`},
		{"plan --crictl (stderr)", "note: env DSN of app holds a Secret value"},
		{"plan --crictl (stderr)", "note: the args of app hold a Secret value"},
		{"run --auto", "output: hook sees token <redacted> and dsn postgres://u:<redacted>@db"},
		{"run --auto", "STATUS Running"},
		{"run --auto json", `"args":["checks","\u003credacted\u003e","--pin=\u003credacted\u003e"]`},
		// The create step's subPath detail (bind-mounted as root, checked
		// otherwise) names the expanded subPathExpr and its path.
		{"run --auto json", `(scratch, subPath \"\u003credacted\u003e\")`},
		{"run --auto json", `kubernetes.io~empty-dir/scratch/\u003credacted\u003e `},
	} {
		if !strings.Contains(outputs[w.output], w.want) {
			t.Errorf("%s lacks %q", w.output, w.want)
		}
	}
}

// TestSecretsNeverShownOnFailure: the runtime's error text and the kubelet's
// config error can quote a Secret value (a command that is not found, a
// subPathExpr that expands to a bad path): the failed step, its call, the
// pod's status and events, the error line and stderr show it masked.
func TestSecretsNeverShownOnFailure(t *testing.T) {
	base, err := os.ReadFile("../../testdata/pods/secrets-expansion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit []string // from, to, ...
		want string
	}{{
		name: "runtime error quotes the secret",
		edit: []string{"  name: secrets-expansion\n", "  name: secrets-expansion\n  annotations:\n" +
			`    sim.podstep.dev/start-error.app: "exec: \"Pg-Pa55word-Xk39q\": executable file not found in $PATH"` + "\n"},
		want: `RunContainerError: exec: "<redacted>": executable file not found`,
	}, {
		name: "subPathExpr expands to an absolute path",
		edit: []string{
			"      value: postgres://u:$(DB_PASSWORD)@db\n", "      value: /u:$(DB_PASSWORD)@db\n",
			"      subPathExpr: $(PIN)\n", "      subPathExpr: $(DSN)\n",
		},
		want: "CreateContainerConfigError: error SubPath `/u:<redacted>@db` must not be an absolute path",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := string(base)
			for i := 0; i < len(tc.edit); i += 2 {
				if !strings.Contains(pod, tc.edit[i]) {
					t.Fatalf("the manifest lacks %q", tc.edit[i])
				}
				pod = strings.Replace(pod, tc.edit[i], tc.edit[i+1], 1)
			}
			file := filepath.Join(t.TempDir(), "pod.yaml")
			if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
				t.Fatal(err)
			}
			root, logs := dirs(t)
			outputs := map[string]string{}
			for _, format := range []string{"text", "json"} {
				code, stdout, stderr := run(t, "run", "--auto", "--sim", "--no-color", "--grace-period", "0", "-o", format,
					"-f", file, "--root-dir", root, "--log-dir", logs)
				if code != ExitPodFailed {
					t.Fatalf("%s: exit %d, want 1: %s\n%s", format, code, stderr, stdout)
				}
				outputs[format], outputs[format+" (stderr)"] = stdout, stderr
			}
			assertNoSecrets(t, outputs, secretForms(expansionSecrets...))
			if !strings.Contains(outputs["text"], tc.want) {
				t.Errorf("text output lacks %q:\n%s", tc.want, outputs["text"])
			}
		})
	}
}
