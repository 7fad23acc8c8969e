package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// execKubeconfig writes a kubeconfig (of an https server: clientcmd
// reads the user's credentials only for TLS) whose user logs in with an exec
// credential plugin (a shell script) that writes an OSC 52 sequence (a
// clipboard write) to its stderr and a token to its stdout.
func execKubeconfig(t *testing.T, server string) (kubeconfig, plugin string) {
	t.Helper()
	dir := t.TempDir()
	plugin = filepath.Join(dir, "cred-plugin")
	script := `#!/bin/sh
printf 'fetching a token \033]52;c;cm0gLXJmIH4K\007 done\n' >&2
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-123"}}'
`
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(dir, "config")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %q
      args: [--region, eu]
      interactiveMode: Never
contexts:
- name: x
  context: {cluster: c, user: u, namespace: default}
current-context: x
`, server, plugin)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, plugin
}

// TestExecPlugin: a kubeconfig's exec credential plugin is named on
// stderr (command and file) before it runs; its stderr reaches podstep's
// stderr escaped (an OSC 52 clipboard write is shown, not sent to the
// terminal); a kubeconfig file another user owns, or that group or others
// may write, is refused unless AllowExecPlugins (issue 34, hole 5).
func TestExecPlugin(t *testing.T) {
	var gotAuth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		http.NotFound(w, r)
	}))
	defer srv.Close()

	t.Run("named and sanitised", func(t *testing.T) {
		kc, plugin := execKubeconfig(t, srv.URL)
		var stderr bytes.Buffer
		c, err := Connect(Options{Kubeconfig: kc, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		warn := fmt.Sprintf("podstep: kubeconfig %s: user u runs the exec credential plugin %s --region eu to log in to %s\n", kc, plugin, srv.URL)
		if stderr.String() != warn {
			t.Errorf("before any request, stderr %q; want %q", stderr.String(), warn)
		}
		gotAuth = nil
		_, _ = kube.Get[corev1.Pod](context.Background(), c.API, kube.Pods, "default", "p")
		if len(gotAuth) == 0 || gotAuth[0] != "Bearer tok-123" {
			t.Fatalf("the plugin's token was not sent: %q", gotAuth)
		}
		out := stderr.String()
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\a") {
			t.Errorf("the plugin's escape reached stderr raw: %q", out)
		}
		if want := `podstep: exec plugin cred-plugin: fetching a token \x1b]52;c;cm0gLXJmIH4K\x07 done`; !strings.Contains(out, want) {
			t.Errorf("stderr %q; want the plugin's line escaped: %q", out, want)
		}
	})

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, kc string)
		want  string
	}{
		{"group-writable", func(t *testing.T, kc string) { chmod(t, kc, 0o664) }, "writable by its group (mode 0664)"},
		{"world-writable", func(t *testing.T, kc string) { chmod(t, kc, 0o666) }, "writable by group and others (mode 0666)"},
		{"another user's", func(t *testing.T, kc string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			if err := os.Chown(kc, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534, not by you (uid 0) or root"},
		{"in a world-writable dir", func(t *testing.T, kc string) { chmod(t, filepath.Dir(kc), 0o777) }, "a directory anyone may write to (mode 0777, not sticky)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, plugin := execKubeconfig(t, srv.URL)
			marker := filepath.Join(filepath.Dir(plugin), "ran")
			// The plugin leaves a file when it runs: it must not.
			script, _ := os.ReadFile(plugin)
			if err := os.WriteFile(plugin, append([]byte("#!/bin/sh\ntouch "+marker+"\n"), script[len("#!/bin/sh\n"):]...), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, kc)
			var stderr bytes.Buffer
			_, err := Connect(Options{Kubeconfig: kc, Stderr: &stderr})
			var ue *UntrustedError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), kc) ||
				!strings.Contains(err.Error(), plugin) || !strings.Contains(err.Error(), "--allow-exec-plugins") {
				t.Fatalf("err %v; want an *UntrustedError naming %s, %s, %q and --allow-exec-plugins", err, kc, plugin, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the plugin ran")
			}
			// --allow-exec-plugins: loaded, named, run.
			stderr.Reset()
			c, err := Connect(Options{Kubeconfig: kc, Stderr: &stderr, AllowExecPlugins: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "runs the exec credential plugin "+plugin) {
				t.Errorf("stderr %q: the plugin is not named", stderr.String())
			}
			_, _ = kube.Get[corev1.Pod](context.Background(), c.API, kube.Pods, "default", "p")
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("with AllowExecPlugins, the plugin did not run")
			}
		})
	}

	t.Run("KUBECONFIG", func(t *testing.T) {
		kc, _ := execKubeconfig(t, srv.URL)
		chmod(t, kc, 0o666)
		t.Setenv("KUBECONFIG", kc)
		var stderr bytes.Buffer
		_, err := Connect(Options{Stderr: &stderr})
		var ue *UntrustedError
		if !errors.As(err, &ue) || ue.File != kc {
			t.Fatalf("err %v; want an *UntrustedError for %s", err, kc)
		}
	})
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestKubeconfigBounded: a kubeconfig that is a device or too large is an
// error after reading at most the bound.
func TestKubeconfigBounded(t *testing.T) {
	_, err := Load(Options{Kubeconfig: "/dev/zero"})
	if err == nil || !strings.Contains(err.Error(), "kubeconfig: /dev/zero: binary data") {
		t.Errorf("err %v", err)
	}
}
