// Package imageconfig reads an image's config (Entrypoint, Cmd, User, Env,
// WorkingDir, ExposedPorts) from its registry, for the simulated runtime:
// what a container of the image runs and as whom, as a real runtime would
// know it after a pull.
//
// A read is bounded in time (Options.Timeout) and size (manifests and the
// config blob: Options.MaxSize; a larger one is refused before its body is
// read), honours HTTPS_PROXY/NO_PROXY, and speaks plain HTTP only to
// loopback registries or those named in Options.Insecure (containerd's
// defaults: localhost is the only host it tries over HTTP unconfigured).
// Credentials are the ones the pull sends (the CRI AuthConfig of the
// PullImage request, matched by the engine from the pod's pull secrets and
// the node's keyring); they are never written anywhere nor shown.
//
// Results are cached by digest: in memory for the Fetcher's life (one run),
// negative answers included, and on disk under Options.CacheDir (a tag's
// digest for Options.TagTTL, a digest's config for good: content-addressed).
// A cache hit makes no request.
package imageconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/podstep/podstep/internal/fsperm"
)

// Defaults of Options.
const (
	DefaultTimeout = 3 * time.Second
	DefaultMaxSize = 4 << 20 // 4 MiB: real configs are a few KiB
	DefaultTagTTL  = time.Hour
	// dialTimeout bounds the connection alone: a registry that cannot be
	// reached at all (an offline machine) costs at most this, once per run.
	dialTimeout = time.Second
)

// Config is the part of an image's config (the OCI image config's
// "config" object) that says what a container of it runs.
type Config struct {
	Entrypoint   []string `json:"Entrypoint,omitempty"`
	Cmd          []string `json:"Cmd,omitempty"`
	User         string   `json:"User,omitempty"`
	Env          []string `json:"Env,omitempty"`
	WorkingDir   string   `json:"WorkingDir,omitempty"`
	ExposedPorts []string `json:"ExposedPorts,omitempty"` // "80/tcp", sorted
}

// Result is a config read and where it comes from.
type Result struct {
	Config Config
	// Source names the image the config was read from:
	// REGISTRY/REPOSITORY@DIGEST, the digest the reference resolved to
	// (an index's for a multi-arch image).
	Source string
	// Cached says no request was made for it.
	Cached bool
}

// Auth is a registry credential: the fields of the CRI AuthConfig.
type Auth struct {
	Username, Password, Auth, IdentityToken, RegistryToken string
}

// Options tunes a Fetcher. The zero value is valid.
type Options struct {
	// Timeout bounds one read, all its requests (default DefaultTimeout).
	Timeout time.Duration
	// MaxSize bounds a manifest and a config blob, in bytes (default DefaultMaxSize).
	MaxSize int64
	// CacheDir is where results are kept between runs ("": memory only).
	// It is made 0700; its files are 0600, written whole (temp + rename).
	CacheDir string
	// TagTTL is how long a tag's digest is taken from the disk cache
	// without asking the registry (default DefaultTagTTL).
	TagTTL time.Duration
	// Insecure are registries (host[:port]) that may be read over plain
	// HTTP, besides loopback ones.
	Insecure []string
	// Transport is the base transport (default: a clone of
	// http.DefaultTransport: HTTPS_PROXY, NO_PROXY honoured).
	Transport http.RoundTripper
	// OS, Arch and Variant pick a multi-arch image's manifest (default
	// linux and this machine's).
	OS, Arch, Variant string
	// Now is the clock for TagTTL (default time.Now).
	Now func() time.Time
}

// Fetcher reads image configs. It is safe for concurrent use.
type Fetcher struct {
	o  Options
	rt http.RoundTripper

	private sync.Once
	trusted bool // the cache dir may be read: private (fsperm.Private)

	mu    sync.Mutex
	calls map[string]*call  // by reference, platform and credential
	down  map[string]error  // registries that could not be reached, this run
	byDig map[string]Result // by digest and platform
}

type call struct {
	done chan struct{}
	res  Result
	err  error
}

// New returns a Fetcher with o's settings.
func New(o Options) *Fetcher {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.TagTTL <= 0 {
		o.TagTTL = DefaultTagTTL
	}
	if o.OS == "" {
		o.OS = "linux"
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	base := o.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
		t.TLSHandshakeTimeout = o.Timeout
		t.ResponseHeaderTimeout = o.Timeout
		base = t
	}
	return &Fetcher{o: o, rt: &plainGuard{base: base, insecure: o.Insecure},
		calls: map[string]*call{}, down: map[string]error{}, byDig: map[string]Result{}}
}

// Error is a read that failed. Unreachable says no registry answered at
// all (no route, no name, connection refused or timed out): on an offline
// machine that is expected and not worth a warning.
type Error struct {
	Ref         string
	Unreachable bool
	Err         error
	// Status is the HTTP status the registry answered a request with
	// (401, 403, 404, ...; 0 when it did not answer one), and URL that
	// request's address: a refusal the runtime's own pull would get too.
	Status int
	URL    string
}

// Refused reports whether the registry answered the read with a refusal a
// runtime's pull with the same credentials gets too: unauthorized (401),
// forbidden (403) or not found (404).
func (e *Error) Refused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusNotFound
}

func (e *Error) Error() string {
	return fmt.Sprintf("image config of %s: %v", e.Ref, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Fetch reads the config of the image ref names (a reference as the pod
// names it; normalized as docker does), with auth (nil: anonymous). Errors
// are *Error.
func (f *Fetcher) Fetch(ctx context.Context, ref string, auth *Auth) (Result, error) {
	r, err := name.ParseReference(ref, f.nameOpts(ref)...)
	if err != nil {
		return Result{}, &Error{Ref: ref, Err: fmt.Errorf("not an image reference: %w", err)}
	}
	key := r.Name() + "|" + f.platform() + "|" + authKey(auth)
	f.mu.Lock()
	if err, ok := f.down[r.Context().RegistryStr()]; ok {
		f.mu.Unlock()
		return Result{}, err
	}
	if c, ok := f.calls[key]; ok {
		f.mu.Unlock()
		select {
		case <-c.done:
			res := c.res
			res.Cached = true
			return res, c.err
		case <-ctx.Done():
			return Result{}, &Error{Ref: ref, Err: ctx.Err()}
		}
	}
	c := &call{done: make(chan struct{})}
	f.calls[key] = c
	f.mu.Unlock()

	c.res, c.err = f.fetch(ctx, r, auth)
	var e *Error
	if errors.As(c.err, &e) && e.Unreachable {
		f.mu.Lock()
		f.down[r.Context().RegistryStr()] = c.err
		f.mu.Unlock()
	}
	close(c.done)
	return c.res, c.err
}

func (f *Fetcher) nameOpts(ref string) []name.Option {
	host, _, _ := strings.Cut(ref, "/")
	if f.allowedPlain(host) {
		return []name.Option{name.Insecure}
	}
	return nil
}

func (f *Fetcher) allowedPlain(host string) bool {
	return isLoopback(host) || slices.Contains(f.o.Insecure, host)
}

func (f *Fetcher) platform() string {
	p := f.o.OS + "/" + f.o.Arch
	if f.o.Variant != "" {
		p += "/" + f.o.Variant
	}
	return p
}

// authKey tells credentials apart in the memory cache without keeping
// them: a hash.
func authKey(a *Auth) string {
	if a == nil {
		return ""
	}
	h := sha256.Sum256([]byte(a.Username + "\x00" + a.Password + "\x00" + a.Auth + "\x00" + a.IdentityToken + "\x00" + a.RegistryToken))
	return hex.EncodeToString(h[:8])
}

// fetch is one read: the tag's digest (disk cache, else the registry),
// the digest's config (memory, disk, else the registry).
func (f *Fetcher) fetch(ctx context.Context, r name.Reference, auth *Auth) (Result, error) {
	repo := r.Context()
	source := func(dig string) string { return repo.RegistryStr() + "/" + repo.RepositoryStr() + "@" + dig }
	dig := ""
	if d, ok := r.(name.Digest); ok {
		dig = d.DigestStr()
	} else if d, ok := f.loadTag(r.Name()); ok {
		dig = d
	}
	if dig != "" {
		if res, ok := f.cached(source(dig)); ok {
			return res, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	c, err := f.client(ctx, repo, auth)
	if err != nil {
		return Result{}, f.wrap(ctx, r.String(), err)
	}
	id := r.Identifier()
	if dig != "" {
		id = dig // the tag's digest from the cache: its manifest, whatever the tag names now
	}
	body, mediaType, got, err := c.manifest(ctx, id)
	if err != nil {
		return Result{}, f.wrap(ctx, r.String(), err)
	}
	if dig != "" && got != dig {
		return Result{}, &Error{Ref: r.String(), Err: fmt.Errorf("manifest %s has digest %s", dig, got)}
	}
	dig = got
	if _, ok := r.(name.Tag); ok {
		f.storeTag(r.Name(), dig)
	}
	if res, ok := f.cached(source(dig)); ok {
		return res, nil
	}
	cfg, err := c.config(ctx, body, mediaType, f)
	if err != nil {
		return Result{}, f.wrap(ctx, r.String(), err)
	}
	res := Result{Config: cfg, Source: source(dig)}
	f.remember(res)
	return res, nil
}

// wrap makes err an *Error, telling an unreachable registry (dial, name
// resolution) apart from one that answered badly or hung.
func (f *Fetcher) wrap(ctx context.Context, ref string, err error) error {
	e := &Error{Ref: ref, Err: err}
	var te *transport.Error
	if errors.As(err, &te) {
		e.Status = te.StatusCode
		if te.Request != nil && te.Request.URL != nil {
			e.URL = te.Request.URL.Redacted()
		}
	}
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		e.Unreachable = true
	case errors.As(err, &op) && op.Op == "dial":
		e.Unreachable = true
	case ctx.Err() != nil, errors.As(err, &ne) && ne.Timeout(), timedOut(err):
		e.Err = fmt.Errorf("the registry did not answer within %s", f.o.Timeout)
	}
	return e
}

// timedOut: net/http's timeouts, when go-containerregistry's ping joins
// the errors of its https and http tries as text (the https try refused
// at once, the http one waited for headers), so errors.As cannot see them.
func timedOut(err error) bool {
	s := err.Error()
	return strings.Contains(s, "timeout awaiting response headers") || strings.Contains(s, "Client.Timeout exceeded") || strings.Contains(s, "i/o timeout")
}

// cached is the result for source from memory, else the disk.
func (f *Fetcher) cached(source string) (Result, bool) {
	key := source + "|" + f.platform()
	f.mu.Lock()
	res, ok := f.byDig[key]
	f.mu.Unlock()
	if ok {
		res.Cached = true
		return res, true
	}
	var e diskConfig
	if !f.load("configs", key, &e) || e.Source != source || e.Platform != f.platform() {
		return Result{}, false
	}
	res = Result{Config: e.Config, Source: source, Cached: true}
	f.mu.Lock()
	f.byDig[key] = res
	f.mu.Unlock()
	return res, true
}

func (f *Fetcher) remember(res Result) {
	key := res.Source + "|" + f.platform()
	f.mu.Lock()
	f.byDig[key] = res
	f.mu.Unlock()
	f.store("configs", key, diskConfig{Source: res.Source, Platform: f.platform(), Config: res.Config})
}

// diskConfig and diskTag are the cache's files.
type diskConfig struct {
	Source   string `json:"source"`
	Platform string `json:"platform"`
	Config   Config `json:"config"`
}

type diskTag struct {
	Ref    string    `json:"ref"`
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`
}

func (f *Fetcher) loadTag(ref string) (string, bool) {
	var t diskTag
	key := ref + "|" + f.platform()
	if !f.load("tags", key, &t) || t.Ref != ref || !strings.HasPrefix(t.Digest, "sha256:") {
		return "", false
	}
	if age := f.o.Now().Sub(t.At); age < 0 || age > f.o.TagTTL {
		return "", false
	}
	return t.Digest, true
}

func (f *Fetcher) storeTag(ref, dig string) {
	f.store("tags", ref+"|"+f.platform(), diskTag{Ref: ref, Digest: dig, At: f.o.Now().UTC()})
}

// fileName is the cache file of key in kind's directory.
func (f *Fetcher) fileName(kind, key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(f.o.CacheDir, kind, hex.EncodeToString(h[:])+".json")
}

// load reads a cache file (at most MaxSize plus its JSON's own bytes);
// any problem is a miss.
func (f *Fetcher) load(kind, key string, v any) bool {
	if f.o.CacheDir == "" {
		return false
	}
	f.private.Do(func() { f.trusted = fsperm.Private(f.o.CacheDir, false) == nil })
	if !f.trusted { // absent, or another user could have planted its files
		return false
	}
	fh, err := os.Open(f.fileName(kind, key))
	if err != nil {
		return false
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 2*f.o.MaxSize+1))
	if err != nil || int64(len(b)) > 2*f.o.MaxSize {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

// store writes a cache file whole (temp + rename, 0600 in 0700
// directories); failures only cost a later read.
func (f *Fetcher) store(kind, key string, v any) {
	if f.o.CacheDir == "" {
		return
	}
	_ = writeFile(filepath.Join(f.o.CacheDir, kind), f.fileName(kind, key), v)
}

// plainGuard refuses plain-HTTP requests to a registry that is neither
// loopback nor named insecure (go-containerregistry falls back to HTTP
// for private-network and .local hosts; containerd does not).
type plainGuard struct {
	base     http.RoundTripper
	insecure []string
}

func (g *plainGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !isLoopback(req.URL.Host) && !slices.Contains(g.insecure, req.URL.Host) {
		return nil, fmt.Errorf("plain HTTP to %s refused: only loopback registries and --image-config-insecure ones are read without TLS", req.URL.Host)
	}
	return g.base.RoundTrip(req)
}

// isLoopback: localhost or a loopback IP, with or without a port.
func isLoopback(host string) bool {
	h := host
	if sh, _, err := net.SplitHostPort(host); err == nil {
		h = sh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// registryClient makes the requests of one read.
type registryClient struct {
	http *http.Client
	base url.URL // scheme://host/v2/REPO/
	max  int64
}

func (f *Fetcher) client(ctx context.Context, repo name.Repository, auth *Auth) (*registryClient, error) {
	a := authn.Anonymous
	if auth != nil {
		a = authn.FromConfig(authn.AuthConfig{Username: auth.Username, Password: auth.Password, Auth: auth.Auth,
			IdentityToken: auth.IdentityToken, RegistryToken: auth.RegistryToken})
	}
	tr, err := transport.NewWithContext(ctx, repo.Registry, a, f.rt, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, err
	}
	return &registryClient{http: &http.Client{Transport: tr}, max: f.o.MaxSize,
		base: url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/"}}, nil
}

// Media types of manifests and indexes, OCI and Docker.
const (
	ociManifest    = "application/vnd.oci.image.manifest.v1+json"
	ociIndex       = "application/vnd.oci.image.index.v1+json"
	dockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	dockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// get fetches path under the repository, at most max bytes (and at most
// size when its descriptor says, size > 0), and checks its digest when
// want is one.
func (c *registryClient) get(ctx context.Context, path, accept, want string, size int64) ([]byte, string, error) {
	u := c.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return nil, "", err
	}
	if resp.ContentLength > c.max {
		return nil, "", fmt.Errorf("GET %s: %d bytes, more than the %d read at most", u.Path, resp.ContentLength, c.max)
	}
	limit := c.max
	if size > 0 {
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			return nil, "", fmt.Errorf("GET %s: %d bytes where its descriptor says %d", u.Path, resp.ContentLength, size)
		}
		limit = min(limit, size)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", u.Path, err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("GET %s: more than the %d bytes read at most", u.Path, limit)
	}
	sum := sha256.Sum256(b)
	dig := "sha256:" + hex.EncodeToString(sum[:])
	if want != "" && want != dig {
		return nil, "", fmt.Errorf("GET %s: content has digest %s", u.Path, dig)
	}
	return b, dig, nil
}

// manifest fetches a manifest or index by tag or digest: its body, media
// type and digest.
func (c *registryClient) manifest(ctx context.Context, id string) ([]byte, string, string, error) {
	want := ""
	if strings.HasPrefix(id, "sha256:") {
		want = id
	}
	b, dig, err := c.get(ctx, "manifests/"+id, strings.Join([]string{ociIndex, dockerList, ociManifest, dockerManifest}, ", "), want, 0)
	if err != nil {
		return nil, "", "", err
	}
	var m struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", "", fmt.Errorf("manifest %s is not JSON: %w", id, err)
	}
	return b, m.MediaType, dig, nil
}

// descriptor is an OCI descriptor's fields read here.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	} `json:"platform"`
}

// config follows an index to this platform's manifest, and a manifest to
// its config blob.
func (c *registryClient) config(ctx context.Context, body []byte, mediaType string, f *Fetcher) (Config, error) {
	var doc struct {
		Config    *descriptor  `json:"config"`
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Config{}, fmt.Errorf("manifest is not JSON: %w", err)
	}
	if mediaType == ociIndex || mediaType == dockerList || (mediaType == "" && doc.Manifests != nil && doc.Config == nil) {
		d, err := f.pick(doc.Manifests)
		if err != nil {
			return Config{}, err
		}
		if d.Size > c.max {
			return Config{}, fmt.Errorf("the %s manifest is %d bytes, more than the %d read at most", f.platform(), d.Size, c.max)
		}
		body, mediaType, _, err = c.manifest(ctx, d.Digest)
		if err != nil {
			return Config{}, err
		}
		doc.Config, doc.Manifests = nil, nil
		if err := json.Unmarshal(body, &doc); err != nil {
			return Config{}, fmt.Errorf("manifest %s is not JSON: %w", d.Digest, err)
		}
		if mediaType == ociIndex || mediaType == dockerList {
			return Config{}, fmt.Errorf("manifest %s is an index in an index", d.Digest)
		}
	}
	if doc.Config == nil || !strings.HasPrefix(doc.Config.Digest, "sha256:") {
		return Config{}, errors.New("the manifest names no sha256 config")
	}
	if doc.Config.Size > c.max {
		return Config{}, fmt.Errorf("config %s is %d bytes, more than the %d read at most: not read", doc.Config.Digest, doc.Config.Size, c.max)
	}
	b, _, err := c.get(ctx, "blobs/"+doc.Config.Digest, "", doc.Config.Digest, doc.Config.Size)
	if err != nil {
		return Config{}, err
	}
	return parseConfig(b)
}

// pick is the manifest of f's platform in an index: OS and architecture
// equal, the variant too when both name one.
func (f *Fetcher) pick(ms []descriptor) (descriptor, error) {
	var seen []string
	for _, m := range ms {
		if m.Platform == nil {
			continue
		}
		p := m.Platform
		if p.OS == f.o.OS && p.Architecture == f.o.Arch && (f.o.Variant == "" || p.Variant == "" || p.Variant == f.o.Variant) {
			if !strings.HasPrefix(m.Digest, "sha256:") {
				return descriptor{}, fmt.Errorf("the %s manifest has digest %q", f.platform(), m.Digest)
			}
			return m, nil
		}
		seen = append(seen, p.OS+"/"+p.Architecture)
	}
	return descriptor{}, fmt.Errorf("no %s manifest in the index (it has: %s)", f.platform(), strings.Join(seen, ", "))
}

// parseConfig reads the OCI image config's "config" object.
func parseConfig(b []byte) (Config, error) {
	var doc struct {
		Config *struct {
			Entrypoint   []string            `json:"Entrypoint"`
			Cmd          []string            `json:"Cmd"`
			User         string              `json:"User"`
			Env          []string            `json:"Env"`
			WorkingDir   string              `json:"WorkingDir"`
			ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		} `json:"config"`
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return Config{}, fmt.Errorf("config is not an image config: %w", err)
	}
	if doc.OS == "" && doc.Architecture == "" && doc.Config == nil {
		return Config{}, errors.New("config is not an image config: no os, architecture or config")
	}
	var c Config
	if doc.Config != nil {
		c = Config{Entrypoint: doc.Config.Entrypoint, Cmd: doc.Config.Cmd, User: doc.Config.User,
			Env: doc.Config.Env, WorkingDir: doc.Config.WorkingDir}
		for p := range doc.Config.ExposedPorts {
			c.ExposedPorts = append(c.ExposedPorts, p)
		}
		slices.Sort(c.ExposedPorts)
	}
	return c, nil
}
