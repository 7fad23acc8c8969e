package shadow

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCacheLimit(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int64
		err  bool
	}{
		{"", DefaultCacheMB << 20, false},
		{"0", 0, false},
		{"512", 512 << 20, false},
		{"-1", 0, true},
		{"2G", 0, true},
	} {
		t.Setenv(CacheEnv, tc.env)
		got, err := CacheLimit()
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s=%q: %d, %v; want %d, error %v", CacheEnv, tc.env, got, err, tc.want, tc.err)
		}
	}
}

// A shadow's root goes back to its cache at a clean stop and is claimed by
// the next shadow (one at a time); the caches are kept within the bound,
// the least recently used removed first; with the bound 0 none is kept.
func TestCacheGiveBackClaimEvict(t *testing.T) {
	base := filepath.Join(t.TempDir(), "shadows")
	cacheBase := CacheBase(base)
	fill := func(l Layout, mb int) {
		t.Helper()
		d := filepath.Join(l.Root(), "io.containerd.content.v1.content")
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "blob"), make([]byte, mb<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	shadowAt := func(id string) Layout {
		l := Layout{Dir: filepath.Join(base, id)}
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Setenv(CacheEnv, "10")
	old, recent := filepath.Join(cacheBase, "old"), filepath.Join(cacheBase, "recent")
	a := shadowAt("a")
	fill(a, 4)
	if err := giveBack(old, a); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(old, past, past)
	// The next shadow of that runtime claims it; another one meanwhile
	// starts cold.
	b, c := shadowAt("b"), shadowAt("c")
	if !claimCache(old, b.Root()) {
		t.Fatal("the cache was not claimed")
	}
	if claimCache(old, c.Root()) {
		t.Fatal("a claimed cache was claimed again")
	}
	if err := giveBack(old, b); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(old, past, past)
	// Another runtime's cache: 4 + 7 MB is over 10: the older goes.
	d := shadowAt("d")
	fill(d, 7)
	if err := giveBack(recent, d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(old); err == nil {
		t.Errorf("%s kept over the bound", old)
	}
	if _, err := os.Lstat(filepath.Join(recent, "root")); err != nil {
		t.Errorf("the most recent cache: %v", err)
	}
	// Bound 0: a stop keeps nothing, and removes what was kept.
	t.Setenv(CacheEnv, "0")
	e := shadowAt("e")
	fill(e, 1)
	if err := giveBack(filepath.Join(cacheBase, "other"), e); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(cacheBase); err == nil {
		t.Errorf("%s kept with %s=0", cacheBase, CacheEnv)
	}
}
