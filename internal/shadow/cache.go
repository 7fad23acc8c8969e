package shadow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/podstep/podstep/internal/rmtree"
)

// The image cache: a shadow's containerd root (its content store, image
// metadata and unpacked snapshots) kept between shadows of the same node
// runtime, so that a warm start copies no image (the copy, `ctr images
// export` and `import` with its unpacking, is most of a cold start). Only
// the root is kept, and only after a clean stop: every sandbox and
// container removed through the CRI (their metadata and snapshots go with
// them), the containerd ended by SIGTERM, nothing mounted under it. State,
// sockets, network, shims, cgroups and the rest of the shadow's dir go as
// before. A shadow claims the cache by renaming its root into its own dir
// (one shadow at a time: another started meanwhile starts cold), and gives
// it back by renaming it again at its stop; a killed run's root goes with
// its dir. The images are checked at each start against the node's (image
// IDs): one the node has under another ID is copied again, one the node
// does not have is removed from the shadow (the replay pulls it, as the
// node would).

// CacheEnv is the environment variable bounding the cache, in MB (disk
// blocks of all the cache's roots; DefaultCacheMB when unset). 0 keeps no
// cache: every shadow starts cold, and a shadow's stop removes the cache.
const CacheEnv = "PODSTEP_SHADOW_CACHE_MB"

// DefaultCacheMB is the cache's bound when CacheEnv is unset.
const DefaultCacheMB = 2048

// cacheIndex is the file in a cached root naming the images the shadow
// had of the node's (ref → image ID): which to export before the
// containerd answers. A hint only: each is checked once it answers.
const cacheIndex = "podstep-images.json"

// CacheBase is where the caches of shadows under base live: beside base
// (base's parent/shadow-cache), so that Leftovers never takes one for a
// shadow.
func CacheBase(base string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(base)), "shadow-cache")
}

// CacheLimit is the cache's bound in bytes from CacheEnv (0: no cache).
func CacheLimit() (int64, error) {
	v, ok := os.LookupEnv(CacheEnv)
	if !ok || v == "" {
		return DefaultCacheMB << 20, nil
	}
	mb, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mb < 0 || mb > 1<<30 {
		return 0, fmt.Errorf("%s=%q: expected a size in MB, 0 or more (0: no image cache)", CacheEnv, v)
	}
	return mb << 20, nil
}

// cacheKey names the cache of a node runtime: its binary, version and
// config (another snapshotter or version is another cache).
func cacheKey(node *Runtime) string {
	h := sha256.New()
	for _, p := range [][]byte{[]byte(node.Exe), []byte(node.Version), node.ConfigData} {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// claimCache moves the cached root of dir into root: true when it was
// there (a warm start).
func claimCache(dir, root string) bool {
	if err := os.Rename(filepath.Join(dir, "root"), root); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now) // the most recently used is evicted last
	return true
}

// readIndex is a cached root's image index (nil when none).
func readIndex(root string) map[string]string {
	data, err := os.ReadFile(filepath.Join(root, cacheIndex))
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	var idx map[string]string
	if json.Unmarshal(data, &idx) != nil {
		return nil
	}
	return idx
}

// writeIndex records the images the shadow has of the node's.
func writeIndex(root string, idx map[string]string) error {
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, cacheIndex+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, cacheIndex))
}

// giveBack moves a cleanly stopped shadow's root back into its cache (when
// the cache has none meanwhile), then bounds the caches. Nothing may be
// mounted under the root.
func giveBack(cache string, l Layout) error {
	limit, err := CacheLimit()
	if err != nil || limit == 0 {
		_ = removeCaches(filepath.Dir(cache))
		return err
	}
	if m := MountsUnder(l.Root()); len(m) > 0 {
		return fmt.Errorf("image cache: %s still mounted under its root: not kept", m[0])
	}
	if _, err := os.Lstat(l.Root()); err != nil {
		return nil // no root: nothing to keep
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	if err := os.Rename(l.Root(), filepath.Join(cache, "root")); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("image cache: %w", err)
	}
	now := time.Now()
	_ = os.Chtimes(cache, now, now)
	return evict(filepath.Dir(cache), limit)
}

// CacheEntry is one node runtime's image cache.
type CacheEntry struct {
	Dir   string
	Bytes int64 // its disk blocks
	Used  time.Time
}

// Caches are the image caches under cacheBase, most recently used first.
func Caches(cacheBase string) []CacheEntry {
	ents, err := os.ReadDir(cacheBase)
	if err != nil {
		return nil
	}
	var out []CacheEntry
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(cacheBase, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil {
			continue
		}
		out = append(out, CacheEntry{Dir: dir, Bytes: diskUsage(dir), Used: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out
}

// evict removes the least recently used caches until all fit in limit.
func evict(cacheBase string, limit int64) error {
	var total int64
	var errs []error
	for _, c := range Caches(cacheBase) {
		total += c.Bytes
		if total > limit {
			if err := rmtree.RemoveAll(c.Dir); err != nil {
				errs = append(errs, fmt.Errorf("image cache %s over %s=%d: %w", c.Dir, CacheEnv, limit>>20, err))
			}
			total -= c.Bytes
		}
	}
	return errors.Join(errs...)
}

// removeCaches removes every cache under cacheBase, and cacheBase.
func removeCaches(cacheBase string) error {
	var errs []error
	for _, c := range Caches(cacheBase) {
		if err := RemoveCache(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(cacheBase)
	return errors.Join(errs...)
}

// RemoveCache removes one image cache (`podstep cleanup`). A shadow running
// meanwhile keeps its root in its own dir and gives it back at its stop.
func RemoveCache(dir string) error {
	if m := MountsUnder(dir); len(m) > 0 {
		return fmt.Errorf("image cache %s: %s is mounted under it: not removed", dir, m[0])
	}
	if err := rmtree.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("image cache %s: %w", dir, err)
	}
	_ = os.Remove(filepath.Dir(dir)) // the cache base, once empty
	return nil
}

// diskUsage is the disk blocks of the files under dir (links not followed;
// a file linked twice counted once).
func diskUsage(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 && !d.IsDir() {
				if seen[st.Ino] {
					return nil
				}
				seen[st.Ino] = true
			}
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}
