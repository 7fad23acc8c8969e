package imageconfig_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
)

const (
	user     = "puller"
	password = "s3cret-Pa55word"
)

var server = imageconfig.Config{Entrypoint: []string{"/server"}, Cmd: []string{"--port", "8080"}, User: "1000",
	Env: []string{"PATH=/bin", "MODE=prod"}, WorkingDir: "/srv", ExposedPorts: []string{"8080/tcp", "9090/tcp"}}

func TestFetch(t *testing.T) {
	reg := imageconfigtest.New(t, user, password)
	right := &imageconfig.Auth{Username: user, Password: password}
	app := reg.Push(t, "team/app", "1.0", imageconfigtest.ConfigJSON(server))
	other := "amd64"
	if runtime.GOARCH == "amd64" {
		other = "arm64"
	}
	multi := reg.PushIndex(t, "team/multi", "2.0",
		imageconfigtest.Platform{OS: "linux", Arch: other, Config: imageconfigtest.ConfigJSON(imageconfig.Config{User: "other-arch"})},
		imageconfigtest.Platform{OS: "linux", Arch: runtime.GOARCH, Config: imageconfigtest.ConfigJSON(imageconfig.Config{User: "65532", Cmd: []string{"/mine"}})})
	// A manifest that says its config is 10 GB: not one byte of it is asked for.
	reg.PushManifest(t, "team/huge", "1", imageconfigtest.Manifest(imageconfigtest.Digest([]byte("x")), 10<<30), imageconfigtest.OCIManifest)
	// A manifest that lies (a config of 64 bytes) about a 2 MiB config.
	big := append([]byte(`{"os":"linux","architecture":"x","config":{"User":"`), make([]byte, 2<<20)...)
	reg.PushManifest(t, "team/liar", "1", imageconfigtest.Manifest(reg.PushBlob(t, "team/liar", big), 64), imageconfigtest.OCIManifest)
	reg.Push(t, "team/garbage", "1", []byte("\x00\x01 this is not JSON"))
	reg.Push(t, "team/array", "1", []byte(`[1,2,3]`))
	reg.PushManifest(t, "team/badmanifest", "1", []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"md5:abc","size":3}}`), imageconfigtest.OCIManifest)

	tests := []struct {
		name    string
		ref     string
		auth    *imageconfig.Auth
		want    *imageconfig.Config
		source  string
		wantErr string
		status  int // the registry's answer a refused read carries (Error.Status)
	}{
		{name: "right secret", ref: "team/app:1.0", auth: right, want: &server, source: "team/app@" + app},
		{name: "by digest", ref: "team/app@" + app, auth: right, want: &server, source: "team/app@" + app},
		{name: "multi-arch: this platform's", ref: "team/multi:2.0", auth: right,
			want: &imageconfig.Config{User: "65532", Cmd: []string{"/mine"}}, source: "team/multi@" + multi},
		{name: "wrong password", ref: "team/app:1.0", auth: &imageconfig.Auth{Username: user, Password: "wrong"}, wantErr: "UNAUTHORIZED", status: 401},
		{name: "no secret", ref: "team/app:1.0", wantErr: "UNAUTHORIZED", status: 401},
		{name: "no such tag", ref: "team/app:9", auth: right, wantErr: "MANIFEST_UNKNOWN", status: 404},
		{name: "10 GB config", ref: "team/huge:1", auth: right, wantErr: "10737418240 bytes, more than the 4194304 read at most: not read"},
		{name: "config larger than its manifest says", ref: "team/liar:1", auth: right, wantErr: "bytes where its descriptor says 64"},
		{name: "garbage config", ref: "team/garbage:1", auth: right, wantErr: "config is not an image config"},
		{name: "JSON but not a config", ref: "team/array:1", auth: right, wantErr: "config is not an image config"},
		{name: "manifest without a sha256 config", ref: "team/badmanifest:1", auth: right, wantErr: "names no sha256 config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := imageconfig.New(imageconfig.Options{})
			res, err := f.Fetch(context.Background(), reg.Ref(tt.ref), tt.auth)
			if tt.wantErr != "" {
				var e *imageconfig.Error
				if !errors.As(err, &e) || e.Unreachable {
					t.Fatalf("err = %v, want an *Error of a registry that answered", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want it to say %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), password) {
					t.Errorf("err holds the password: %v", err)
				}
				if e.Status != tt.status || e.Refused() != (tt.status != 0) {
					t.Errorf("Status %d, Refused %t; want %d", e.Status, e.Refused(), tt.status)
				}
				if tt.status != 0 && !strings.Contains(e.URL, "/v2/team/app/manifests/") {
					t.Errorf("URL %q, want the manifest's", e.URL)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equal(res.Config, *tt.want) {
				t.Errorf("config = %+v, want %+v", res.Config, *tt.want)
			}
			if want := reg.Host + "/" + tt.source; res.Source != want {
				t.Errorf("source = %q, want %q", res.Source, want)
			}
		})
	}
}

func equal(a, b imageconfig.Config) bool {
	return slices.Equal(a.Entrypoint, b.Entrypoint) && slices.Equal(a.Cmd, b.Cmd) && a.User == b.User &&
		slices.Equal(a.Env, b.Env) && a.WorkingDir == b.WorkingDir && slices.Equal(a.ExposedPorts, b.ExposedPorts)
}

// TestFetchHang: a registry that accepts and never answers costs the
// timeout, and says so.
func TestFetchHang(t *testing.T) {
	reg := imageconfigtest.New(t, "", "")
	reg.Push(t, "app", "1", imageconfigtest.ConfigJSON(server))
	reg.Hang()
	f := imageconfig.New(imageconfig.Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := f.Fetch(context.Background(), reg.Ref("app:1"), nil)
	took := time.Since(start)
	var e *imageconfig.Error
	if !errors.As(err, &e) || e.Unreachable || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Fatalf("err = %v, want a registry that did not answer within 300ms", err)
	}
	if took > 2*time.Second {
		t.Errorf("took %s, want about the 300ms timeout", took)
	}
	// The same image again in this run: the answer is remembered.
	start = time.Now()
	if _, err := f.Fetch(context.Background(), reg.Ref("app:1"), nil); err == nil {
		t.Fatal("second read succeeded")
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("second read took %s: the failure is not cached for the run", took)
	}
}

// TestFetchUnreachable: nothing listens (an offline machine's registry):
// Unreachable, and the registry is not tried again in the run.
func TestFetchUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	f := imageconfig.New(imageconfig.Options{})
	_, err = f.Fetch(context.Background(), host+"/app:1", nil)
	var e *imageconfig.Error
	if !errors.As(err, &e) || !e.Unreachable {
		t.Fatalf("err = %v, want Unreachable", err)
	}
	_, err2 := f.Fetch(context.Background(), host+"/other:2", nil)
	if !errors.Is(err2, err) && err2 != err {
		t.Errorf("second image on the same registry: %v, want the run's remembered %v", err2, err)
	}
	// A name that does not resolve is unreachable too.
	_, err = f.Fetch(context.Background(), "no-such-host.invalid/app:1", nil)
	if !errors.As(err, &e) || !e.Unreachable {
		t.Errorf("unresolvable host: err = %v, want Unreachable", err)
	}
}

// TestCache: a second run (a new Fetcher on the same cache dir) asks the
// registry nothing; the files are private; a tag older than TagTTL is
// asked again, its config still read from the cache.
func TestCache(t *testing.T) {
	reg := imageconfigtest.New(t, user, password)
	reg.Push(t, "team/app", "1.0", imageconfigtest.ConfigJSON(server))
	auth := &imageconfig.Auth{Username: user, Password: password}
	dir := filepath.Join(t.TempDir(), "cache")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	ref := reg.Ref("team/app:1.0")

	first, err := imageconfig.New(imageconfig.Options{CacheDir: dir, Now: clock}).Fetch(context.Background(), ref, auth)
	if err != nil || first.Cached {
		t.Fatalf("first read: %+v, %v", first, err)
	}
	n := reg.Requests()
	if n == 0 {
		t.Fatal("the first read made no request")
	}
	second, err := imageconfig.New(imageconfig.Options{CacheDir: dir, Now: clock}).Fetch(context.Background(), ref, auth)
	if err != nil || !second.Cached || second.Source != first.Source || !equal(second.Config, server) {
		t.Fatalf("second run: %+v, %v", second, err)
	}
	if got := reg.Requests(); got != n {
		t.Errorf("second run made %d requests, want 0", got-n)
	}
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
		if !fi.IsDir() {
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), password) || strings.Contains(string(b), user) {
				t.Errorf("%s holds the credentials", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(imageconfig.DefaultTagTTL + time.Minute)
	third, err := imageconfig.New(imageconfig.Options{CacheDir: dir, Now: clock}).Fetch(context.Background(), ref, auth)
	if err != nil || !third.Cached || third.Source != first.Source {
		t.Fatalf("after the tag TTL: %+v, %v", third, err)
	}
	if reg.Requests() == n {
		t.Error("after the tag TTL the tag was not asked again")
	}
}

// TestPlainHTTP: plain HTTP goes to loopback registries and the named
// insecure ones only (go-containerregistry would use it for private IPs).
func TestPlainHTTP(t *testing.T) {
	tests := []struct {
		host     string
		insecure []string
		refused  bool
	}{
		{host: "127.0.0.1:5000"},
		{host: "localhost:5000"},
		{host: "[::1]:5000"},
		{host: "10.0.0.7:5000", refused: true},
		{host: "registry.local", refused: true},
		{host: "10.0.0.7:5000", insecure: []string{"10.0.0.7:5000"}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			base := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("sent") })
			f := imageconfig.New(imageconfig.Options{Transport: base, Insecure: tt.insecure, Timeout: time.Second})
			rt := imageconfig.GuardForTest(f)
			req, _ := http.NewRequest(http.MethodGet, "http://"+tt.host+"/v2/", nil)
			_, err := rt.RoundTrip(req)
			if refused := err != nil && strings.Contains(err.Error(), "plain HTTP"); refused != tt.refused {
				t.Errorf("err = %v, refused %t, want %t", err, refused, tt.refused)
			}
			req, _ = http.NewRequest(http.MethodGet, "https://"+tt.host+"/v2/", nil)
			if _, err := rt.RoundTrip(req); err == nil || err.Error() != "sent" {
				t.Errorf("https: err = %v, want it sent", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkImageConfig: a read from a registry on loopback (a new run:
// ping, manifest, config blob) and a cache hit (a new run on a warm cache
// dir: no request).
func BenchmarkImageConfig(b *testing.B) {
	reg := imageconfigtest.New(b, user, password)
	reg.Push(b, "team/app", "1.0", imageconfigtest.ConfigJSON(server))
	auth := &imageconfig.Auth{Username: user, Password: password}
	ref := reg.Ref("team/app:1.0")
	b.Run("registry", func(b *testing.B) {
		for b.Loop() {
			if _, err := imageconfig.New(imageconfig.Options{}).Fetch(context.Background(), ref, auth); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache-hit", func(b *testing.B) {
		dir := b.TempDir()
		if _, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), ref, auth); err != nil {
			b.Fatal(err)
		}
		n := reg.Requests()
		for b.Loop() {
			res, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), ref, auth)
			if err != nil || !res.Cached {
				b.Fatal(res, err)
			}
		}
		if reg.Requests() != n {
			b.Fatalf("cache hits made %d requests", reg.Requests()-n)
		}
	})
}

// TestCacheTagMoved: a tag whose digest is cached but whose config file is
// gone is read by that digest, even after the tag moved on.
func TestCacheTagMoved(t *testing.T) {
	reg := imageconfigtest.New(t, "", "")
	first := reg.Push(t, "app", "1", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1"}))
	dir := t.TempDir()
	if _, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), reg.Ref("app:1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "configs")); err != nil {
		t.Fatal(err)
	}
	reg.Push(t, "app", "1", imageconfigtest.ConfigJSON(imageconfig.Config{User: "2"}))
	res, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), reg.Ref("app:1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.User != "1" || !strings.HasSuffix(res.Source, "@"+first) {
		t.Errorf("got %+v, want the cached digest %s's config (user 1)", res, first)
	}
}

// TestCacheNotPrivate: a cache dir that others may write to is not read
// (its files could have been planted).
func TestCacheNotPrivate(t *testing.T) {
	reg := imageconfigtest.New(t, "", "")
	reg.Push(t, "app", "1", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1"}))
	dir := filepath.Join(t.TempDir(), "cache")
	if _, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), reg.Ref("app:1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	n := reg.Requests()
	res, err := imageconfig.New(imageconfig.Options{CacheDir: dir}).Fetch(context.Background(), reg.Ref("app:1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached || reg.Requests() == n {
		t.Errorf("a world-writable cache dir was read (cached %t, %d requests)", res.Cached, reg.Requests()-n)
	}
}
