// Package credential resolves image pull secrets to registry credentials
// the way the kubelet's keyring does (pkg/credentialprovider/keyring.go):
// docker config entries are keyed by registry URL; an image matches an
// entry when its host (with port), and path prefix match, with `*`
// wildcards allowed in host labels. The most specific match wins.
package credential

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Entry is one registry credential from a pull secret.
type Entry struct {
	// Secret is the Secret it came from.
	Secret string
	// Registry is the key as written in the docker config, e.g. "registry.example:5000".
	Registry string
	// Username and Password are the credentials. Never print Password.
	Username string
	Password string
}

// Keyring holds the entries of a pod's pull secrets.
type Keyring struct {
	entries []Entry
}

type dockerConfigEntry struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// Add reads a Secret of type kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg into the keyring.
func (k *Keyring) Add(s *corev1.Secret) error {
	var cfg map[string]dockerConfigEntry
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		var wrapper struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &wrapper); err != nil {
			return fmt.Errorf("secret %q: key %s is not valid docker config JSON: %w", s.Name, corev1.DockerConfigJsonKey, err)
		}
		cfg = wrapper.Auths
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &cfg); err != nil {
			return fmt.Errorf("secret %q: key %s is not valid docker config JSON: %w", s.Name, corev1.DockerConfigKey, err)
		}
	default:
		return fmt.Errorf("secret %q has type %q; image pull secrets must be %s or %s", s.Name, s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	keys := make([]string, 0, len(cfg))
	for reg := range cfg {
		keys = append(keys, reg)
	}
	sort.Strings(keys)
	for _, reg := range keys {
		e := cfg[reg]
		user, pass := e.Username, e.Password
		if e.Auth != "" && user == "" {
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return fmt.Errorf("secret %q: registry %q: auth is not base64", s.Name, reg)
			}
			u, p, found := strings.Cut(string(dec), ":")
			if !found {
				return fmt.Errorf("secret %q: registry %q: auth is not user:password", s.Name, reg)
			}
			user, pass = u, p
		}
		k.entries = append(k.entries, Entry{Secret: s.Name, Registry: reg, Username: user, Password: pass})
	}
	return nil
}

// Entries returns every entry, in secret order.
func (k *Keyring) Entries() []Entry { return append([]Entry(nil), k.entries...) }

// Lookup returns the entries that match image, best match first.
func (k *Keyring) Lookup(image string) []Entry {
	host, repo := Split(image)
	type scored struct {
		e     Entry
		score int
	}
	var hits []scored
	for _, e := range k.entries {
		if s, ok := match(e.Registry, host, repo); ok {
			hits = append(hits, scored{e, s})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	out := make([]Entry, len(hits))
	for i, h := range hits {
		out[i] = h.e
	}
	return out
}

// Split returns an image reference's registry host (with port) and
// repository path, normalised as docker does (no host → docker.io, and
// library/ for one-element names).
func Split(image string) (host, repo string) {
	name := image
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		name = name[:i]
	}
	first, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		host, repo = "docker.io", name
		if !strings.Contains(repo, "/") {
			repo = "library/" + repo
		}
		return host, repo
	}
	return first, rest
}

// match reports whether a docker config key matches host/repo, and how
// specifically (longer path prefixes and exact hosts score higher).
func match(key, host, repo string) (int, bool) {
	k := key
	if !strings.Contains(k, "://") {
		k = "https://" + k
	}
	u, err := url.Parse(k)
	if err != nil {
		return 0, false
	}
	kh := u.Host
	switch kh {
	case "index.docker.io", "registry-1.docker.io":
		kh = "docker.io"
	}
	if u.Path == "/v1/" || u.Path == "/v2/" {
		u.Path = ""
	}
	if !hostMatch(kh, host) {
		return 0, false
	}
	p := strings.Trim(u.Path, "/")
	if p != "" && repo != p && !strings.HasPrefix(repo, p+"/") {
		return 0, false
	}
	score := len(p) * 2
	if !strings.Contains(kh, "*") {
		score++
	}
	return score, true
}

// hostMatch compares hosts label by label, allowing `*` in the pattern's
// labels (path.Match semantics per label), and requires equal ports.
func hostMatch(pattern, host string) bool {
	ph, pp := splitPort(pattern)
	hh, hp := splitPort(host)
	if pp != hp {
		return false
	}
	pl, hl := strings.Split(ph, "."), strings.Split(hh, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, _ := path.Match(pl[i], hl[i]); !ok {
			return false
		}
	}
	return true
}

func splitPort(h string) (string, string) {
	if i := strings.LastIndex(h, ":"); i >= 0 {
		return h[:i], h[i+1:]
	}
	return h, ""
}
