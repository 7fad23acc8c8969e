package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyBadInput: bad flags are one clear error, exit 2, before
// anything listens or is dialled.
func TestProxyBadInput(t *testing.T) {
	dir := t.TempDir()
	sock := "unix://" + filepath.Join(dir, "p.sock")
	badManifest := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badManifest, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: x}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no listen", []string{"proxy", "--auto"}, "--listen is required"},
		{"bad listen", []string{"proxy", "--auto", "--listen", "http://x"}, `unsupported scheme "http"`},
		{"bad output", []string{"proxy", "--auto", "--listen", sock, "-o", "yaml"}, `-o/--output "yaml": expected text, short or json`},
		{"pod without namespace", []string{"proxy", "--auto", "--listen", sock, "--pod", "web"}, `--pod "web": expected NAMESPACE/NAME`},
		{"unknown stage", []string{"proxy", "--auto", "--listen", sock, "--hold", "--hold-stage", "nope"}, `--hold-stage "nope": expected one of`},
		{"stage without hold", []string{"proxy", "--auto", "--listen", sock, "--hold-stage", "sandbox"}, "--hold-stage needs --hold"},
		{"zero timeout", []string{"proxy", "--auto", "--listen", sock, "--request-timeout", "0s"}, "--request-timeout 0s"},
		{"upstream is listen", []string{"proxy", "--auto", "--listen", sock, "--upstream", sock}, "the proxy would call itself"},
		{"tcp without --allow-tcp", []string{"proxy", "--auto", "--listen", "tcp://127.0.0.1:18999"}, "--listen tcp://127.0.0.1:18999: a tcp:// endpoint needs --allow-tcp: the CRI has no authentication: anyone on this machine who can reach the port (loopback included) can run containers as root"},
		{"localhost without --allow-tcp", []string{"proxy", "--auto", "--listen", "tcp://localhost:18999"}, "needs --allow-tcp"},
		{"remote without --allow-tcp", []string{"proxy", "--auto", "--listen", "tcp://0.0.0.0:18999", "--allow-remote"}, "needs --allow-tcp"},
		{"allow-tcp on unix", []string{"proxy", "--auto", "--listen", sock, "--allow-tcp"}, "--allow-tcp: --listen " + sock + " is a unix socket"},
		{"remote listen", []string{"proxy", "--auto", "--listen", "tcp://0.0.0.0:18999", "--allow-tcp"}, "--listen tcp://0.0.0.0:18999: 0.0.0.0 is not a loopback address"},
		{"all addresses", []string{"proxy", "--auto", "--listen", "tcp://:18999", "--allow-tcp"}, "every address is not a loopback address"},
		{"allow-remote on unix", []string{"proxy", "--auto", "--listen", sock, "--allow-remote"}, "--allow-remote: --listen " + sock + " is a unix socket"},
		{"socket-group on tcp", []string{"proxy", "--auto", "--listen", "tcp://127.0.0.1:18999", "--allow-tcp", "--socket-group", "0"}, "is not a unix socket"},
		{"unknown group", []string{"proxy", "--auto", "--listen", sock, "--socket-group", "no-such-group-x"}, `--socket-group "no-such-group-x": group: unknown group`},
		{"kubeconfig and manifest", []string{"proxy", "--auto", "--listen", sock, "--kubeconfig", badManifest, "--manifest", dir}, "--manifest and --kubeconfig/--context both given"},
		{"missing manifest", []string{"proxy", "--auto", "--listen", sock, "--manifest", filepath.Join(dir, "none.yaml")}, "--manifest " + filepath.Join(dir, "none.yaml") + ": no such file or directory"},
		{"invalid manifest", []string{"proxy", "--auto", "--listen", sock, "--manifest", badManifest}, "bad.yaml"},
		{"missing kubeconfig", []string{"proxy", "--auto", "--listen", sock, "--kubeconfig", filepath.Join(dir, "none.kubeconfig")}, "none.kubeconfig"},
		{"csi bad driver name", []string{"proxy", "--auto", "--listen", sock, "--csi", "Bad_Name!"}, `--csi "Bad_Name!": expected DRIVER (a CSI driver name`},
		{"csi relative path", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi=unix://rel/csi.sock"}, `socket path "rel/csi.sock" is not absolute`},
		{"csi not unix", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi=tcp://127.0.0.1:9"}, `expected unix://PATH`},
		{"csi twice", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi", "--csi", "d.csi=unix:///x/csi.sock"}, "driver d.csi given twice"},
		{"csi is listen", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi=" + sock}, "the same socket as --listen"},
		{"csi not registered", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi", "--csi-registry", dir}, "--csi d.csi: no CSI driver of that name is registered in " + dir + " (drivers registered: none)"},
		{"csi socket in the registry", []string{"proxy", "--auto", "--listen", sock, "--csi", "d.csi=unix://" + filepath.Join(dir, "reg", "x.sock"), "--csi-registry", filepath.Join(dir, "reg")}, "is in the kubelet's registration dir"},
		// "the TUI follows one pod" needs a terminal on stdout: without one, proxy runs as --auto (TestRoughEdges).
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q (stdout %q)", code, errOut, tc.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "p.sock")); err == nil {
				t.Errorf("the socket was made")
			}
		})
	}
}
