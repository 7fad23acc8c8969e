// Package imageconfigtest runs a real registry (go-containerregistry's
// pkg/registry, in process) on a loopback httptest server, behind HTTP
// basic auth, for the tests of image config reads: it counts the requests
// that reach it and can be made to hang.
package imageconfigtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/podstep/podstep/internal/imageconfig"
)

// Registry is a running test registry.
type Registry struct {
	// Host is its host:port (127.0.0.1:PORT).
	Host string
	// User and Password are the credentials it accepts ("" user: none needed).
	User, Password string

	reg      http.Handler
	srv      *httptest.Server
	requests atomic.Int64
	hang     atomic.Bool
	unhang   chan struct{}
	once     sync.Once
}

// New starts a registry that wants user/password ("" user: anonymous
// reads), stopped at the test's end.
func New(t testing.TB, user, password string) *Registry {
	t.Helper()
	r := &Registry{User: user, Password: password, unhang: make(chan struct{}),
		reg: registry.New(registry.Logger(nullLogger()))}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	t.Cleanup(func() {
		r.once.Do(func() { close(r.unhang) })
		r.srv.Close()
	})
	return r
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if r.hang.Load() {
		select {
		case <-req.Context().Done():
		case <-r.unhang:
		}
		return
	}
	if r.User != "" {
		u, p, ok := req.BasicAuth()
		if !ok || u != r.User || p != r.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="imageconfigtest"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		}
	}
	r.reg.ServeHTTP(w, req)
}

// Requests is how many requests reached the registry so far.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// Hang makes every request from now on block until the client gives up.
func (r *Registry) Hang() { r.hang.Store(true) }

// Ref is the reference of repo:tag (or repo@digest) on this registry.
func (r *Registry) Ref(repoRef string) string { return r.Host + "/" + repoRef }

// Media types the registry is given.
const (
	OCIManifest = "application/vnd.oci.image.manifest.v1+json"
	OCIIndex    = "application/vnd.oci.image.index.v1+json"
	OCIConfig   = "application/vnd.oci.image.config.v1+json"
)

// ConfigJSON is an OCI image config for this machine's platform with c's
// fields.
func ConfigJSON(c imageconfig.Config) []byte {
	ports := map[string]struct{}{}
	for _, p := range c.ExposedPorts {
		ports[p] = struct{}{}
	}
	doc := map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": c.Entrypoint, "Cmd": c.Cmd, "User": c.User, "Env": c.Env,
			"WorkingDir": c.WorkingDir, "ExposedPorts": ports},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// Digest is the sha256 digest of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// PushBlob stores b in repo and returns its digest.
func (r *Registry) PushBlob(t testing.TB, repo string, b []byte) string {
	t.Helper()
	dig := Digest(b)
	rec := r.do(t, http.MethodPost, "/v2/"+repo+"/blobs/uploads/", nil, "")
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusAccepted || loc == "" {
		t.Fatalf("start upload to %s: %d %s", repo, rec.Code, rec.Body)
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	rec = r.do(t, http.MethodPut, loc+sep+"digest="+dig, b, "application/octet-stream")
	if rec.Code != http.StatusCreated {
		t.Fatalf("upload %s to %s: %d %s", dig, repo, rec.Code, rec.Body)
	}
	return dig
}

// PushManifest stores manifest under repo:ref (a tag or its digest) and
// returns its digest.
func (r *Registry) PushManifest(t testing.TB, repo, ref string, manifest []byte, mediaType string) string {
	t.Helper()
	rec := r.do(t, http.MethodPut, "/v2/"+repo+"/manifests/"+ref, manifest, mediaType)
	if rec.Code != http.StatusCreated {
		t.Fatalf("put manifest %s:%s: %d %s", repo, ref, rec.Code, rec.Body)
	}
	return Digest(manifest)
}

// Manifest is an OCI manifest naming config (size as given: a test may
// lie) and no layers.
func Manifest(configDigest string, size int64) []byte {
	b, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": OCIManifest,
		"config": map[string]any{"mediaType": OCIConfig, "digest": configDigest, "size": size},
		"layers": []any{}})
	return b
}

// Push stores an image whose config is config under repo:tag and returns
// the manifest's digest.
func (r *Registry) Push(t testing.TB, repo, tag string, config []byte) string {
	t.Helper()
	dig := r.PushBlob(t, repo, config)
	return r.PushManifest(t, repo, tag, Manifest(dig, int64(len(config))), OCIManifest)
}

// Platform is one image of a multi-arch index.
type Platform struct {
	OS, Arch, Variant string
	Config            []byte
}

// PushIndex stores an index of one image per platform under repo:tag and
// returns its digest.
func (r *Registry) PushIndex(t testing.TB, repo, tag string, ps ...Platform) string {
	t.Helper()
	var ms []any
	for _, p := range ps {
		cd := r.PushBlob(t, repo, p.Config)
		m := Manifest(cd, int64(len(p.Config)))
		md := r.PushManifest(t, repo, Digest(m), m, OCIManifest)
		plat := map[string]string{"os": p.OS, "architecture": p.Arch}
		if p.Variant != "" {
			plat["variant"] = p.Variant
		}
		ms = append(ms, map[string]any{"mediaType": OCIManifest, "digest": md, "size": len(m), "platform": plat})
	}
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": OCIIndex, "manifests": ms})
	return r.PushManifest(t, repo, tag, idx, OCIIndex)
}

// do sends a request to the registry itself, past auth and the counter.
func (r *Registry) do(t testing.TB, method, path string, body []byte, ctype string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	r.reg.ServeHTTP(rec, req)
	return rec
}

// String names the registry.
func (r *Registry) String() string { return fmt.Sprintf("test registry %s", r.Host) }

func nullLogger() *log.Logger { return log.New(io.Discard, "", 0) }
