//go:build integration

package integration

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleOfFailedPull: a pull refused for a wrong password, recorded,
// then `podstep bundle` of the recording and the harness's containerd: the
// bundle holds the recording, the runtime's version, status (its config),
// pods and containers, the harness's CNI config and IPAM state, the host,
// and a README naming each; neither password shows in any file.
func TestBundleOfFailedPull(t *testing.T) {
	e, reg := setupRegistry(t)
	d := newDirs(t)
	m := writePullManifest(t, reg, pullCase{name: "wrong", key: reg.addr, user: reg.user, password: "Wrong-" + reg.password + "-Pw", refSecret: true, policy: "Always"})
	rec := filepath.Join(t.TempDir(), "pull.rec.gz")
	r := e.run(t, d, m.path, "--record", rec)
	if r.code != 1 {
		t.Fatalf("want exit 1 (ErrImagePull)\n%s", r)
	}
	out := filepath.Join(t.TempDir(), "bug.tar.gz")
	b := e.podstep(t, "bundle", "-o", out, "-r", e.endpoint, "--recording", rec)
	if b.code != 0 {
		t.Fatalf("bundle failed\n%s", b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		_, name, _ := strings.Cut(h.Name, "/")
		files[name] = string(data)
	}
	var conf, ipam bool
	for name := range files {
		conf = conf || strings.HasPrefix(name, "cni/") && strings.HasSuffix(name, ".conflist")
		ipam = ipam || strings.HasPrefix(name, "cni/ipam/")
	}
	for _, want := range []string{"README.txt", "recording.jsonl.gz", "runtime/version.json", "runtime/status.json", "runtime/pods.json", "runtime/containers.json", "host.txt"} {
		if _, ok := files[want]; !ok {
			t.Errorf("no %s in the bundle", want)
		}
	}
	if !conf || !ipam {
		t.Errorf("the bundle lacks the harness's CNI config (%v) or IPAM state (%v): %v\n%s", conf, ipam, keys(files), b)
	}
	if !strings.Contains(files["runtime/status.json"], `"containerdRootDir"`) {
		t.Errorf("runtime/status.json lacks containerd's config:\n%.2000s", files["runtime/status.json"])
	}
	for name, content := range files {
		for _, s := range append(m.secrets, reg.password) {
			if strings.Contains(content, s) {
				t.Errorf("%s holds a secret (%q)", name, s)
			}
		}
	}
	// The recording, gunzipped, holds neither password either.
	gzr, err := gzip.NewReader(strings.NewReader(files["recording.jsonl.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	recText, _ := io.ReadAll(gzr)
	if !strings.Contains(string(recText), "ErrImagePull") {
		t.Errorf("the bundled recording is not the run's")
	}
	for _, s := range append(m.secrets, reg.password) {
		if strings.Contains(string(recText), s) {
			t.Errorf("the bundled recording holds a secret (%q)", s)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
