package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/sim"
)

// untar reads a bundle: file name (without the root dir) → content.
func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		root, name, _ := strings.Cut(h.Name, "/")
		if !strings.HasPrefix(root, "podstep-bundle-") {
			t.Errorf("%s: not under the bundle's root dir", h.Name)
		}
		b, _ := io.ReadAll(tr)
		out[name] = string(b)
	}
}

const (
	password = "Hunter2-Registry-Pw"
	cniToken = "cni-plugin-Token-9f8e"
)

// TestBundle: from the simulated runtime (a real gRPC server), a CNI dir
// with a host-local IPAM and a conflist holding a token, a recording and a
// cluster (fake API server): every part is in, the README names each file,
// the IPAM's addresses are listed, and no secret is anywhere.
func TestBundle(t *testing.T) {
	dir, err := os.MkdirTemp("", "bdl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(filepath.Join(dir, "sim"), 0o700); err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Start(filepath.Join(dir, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c, err := cri.Dial(srv.Endpoint(), "", cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	conf, ipam := filepath.Join(dir, "net.d"), filepath.Join(dir, "networks")
	mustWrite(t, filepath.Join(conf, "10-net.conflist"), `{"cniVersion":"1.0.0","name":"podnet","plugins":[`+
		`{"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","dataDir":"`+ipam+`","ranges":[[{"subnet":"10.1.0.0/24"}]]}},`+
		`{"type":"vendor-agent","apiToken":"`+cniToken+`","auth":{"password":"`+password+`"}}]}`)
	mustWrite(t, filepath.Join(conf, "README"), "not a config")
	mustWrite(t, filepath.Join(ipam, "podnet", "10.1.0.7"), "0123abcd\neth0")
	mustWrite(t, filepath.Join(ipam, "podnet", "last_reserved_ip.0"), "10.1.0.7")
	// A recording larger than the other files' bound is bundled whole.
	rec := filepath.Join(dir, "web.rec")
	recText := `{"type":"header"}` + "\n" + strings.Repeat(`{"type":"log","text":"x"}`+"\n", 250_000)
	mustWrite(t, rec, recText)

	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "shop"}, InvolvedObject: corev1.ObjectReference{UID: "u1"},
			Reason: "FailedCreatePodSandBox", Message: "failed to setup network", Type: "Warning", Count: 3},
	)
	var out bytes.Buffer
	res, err := Write(context.Background(), &out, Options{Recording: rec, Runtime: c, Endpoint: srv.Endpoint(), CNIConfDir: conf,
		API: kubefake.New(cs), Namespace: "shop", Pod: "web", Version: "test", Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, out.Bytes())
	for _, want := range []string{"README.txt", "recording.jsonl", "runtime/version.json", "runtime/status.json", "runtime/pods.json",
		"runtime/containers.json", "cni/10-net.conflist", "cni/ipam/podnet.json", "host.txt", "cluster/pod.yaml", "cluster/events.txt"} {
		if _, ok := files[want]; !ok {
			t.Errorf("no %s in the bundle (has %v)", want, res.Files)
		}
		if want != "README.txt" && !strings.Contains(files["README.txt"], want) {
			t.Errorf("README.txt does not name %s:\n%s", want, files["README.txt"])
		}
	}
	if files["recording.jsonl"] != recText {
		t.Errorf("the recording (%d bytes) is bundled as %d bytes", len(recText), len(files["recording.jsonl"]))
	}
	if _, ok := files["cni/README"]; ok {
		t.Error("a file that is no CNI config was bundled")
	}
	var state struct{ Addresses map[string]string }
	if err := json.Unmarshal([]byte(files["cni/ipam/podnet.json"]), &state); err != nil || state.Addresses["10.1.0.7"] != "0123abcd\neth0" {
		t.Errorf("ipam state %+v (%v), want 10.1.0.7 held by 0123abcd", state, err)
	}
	if !strings.Contains(files["cluster/events.txt"], "FailedCreatePodSandBox") {
		t.Errorf("events: %q", files["cluster/events.txt"])
	}
	// configz: the fake API server has no node proxy: named as missing.
	if !strings.Contains(files["README.txt"], "cluster/configz.json:") {
		t.Errorf("README.txt does not say configz was not read:\n%s", files["README.txt"])
	}
	if res.Masked != 2 {
		t.Errorf("masked %d values, want 2 (apiToken, auth)", res.Masked)
	}
	for name, content := range files {
		for _, s := range []string{password, cniToken} {
			if strings.Contains(content, s) {
				t.Errorf("%s holds the secret %q", name, s)
			}
		}
	}
}

func TestMask(t *testing.T) {
	// containerd 1.6's Status info "config".registry, with credentials.
	in := `{"registry":{"configPath":"","auths":{"r.example":{"auth":"dXNlcjpwYXNz"}},"configs":{"r.example":{"auth":{"username":"u","password":"p4ss","identitytoken":"tok"},"tls":null}},"mirrors":null},` +
		`"disableAuth":false,"tokenFile":"","x":[{"secretName":"s1"}]}`
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	n := mask(v)
	b, _ := json.Marshal(v)
	for _, s := range []string{"dXNlcjpwYXNz", "p4ss", "\"tok\"", "s1"} {
		if strings.Contains(string(b), s) {
			t.Errorf("%s left in %s", s, b)
		}
	}
	for _, s := range []string{`"disableAuth":false`, `"tokenFile":""`, `"configPath":""`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("%s masked (no secret) in %s", s, b)
		}
	}
	if n != 3 {
		t.Errorf("masked %d, want 3 (auths, configs' auth, secretName)", n)
	}
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
