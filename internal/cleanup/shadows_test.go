package cleanup

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/shadow"
)

// Shadows removes a shadow whose podstep has ended, leaves one whose
// podstep runs, keeps a dir with no marker (it may not be a shadow's), and
// removes the shadows' image cache beside them, saying what it was.
func TestShadows(t *testing.T) {
	base := filepath.Join(t.TempDir(), "shadows")
	cache := filepath.Join(shadow.CacheBase(base), "0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(cache, "root", "io.containerd.content.v1.content"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "root", "io.containerd.content.v1.content", "blob"), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name string, m *shadow.Marker) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(dir, "root", "io.containerd.content.v1.content"), 0o700); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			b, _ := json.Marshal(m)
			if err := os.WriteFile(filepath.Join(dir, shadow.MarkerFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// A holder that has ended: a PID with another start time.
	ended := mark.Self("unix:///run/containerd/containerd.sock", false)
	ended.Start++
	dead := write("dead", &shadow.Marker{ID: "dead", Holder: ended, Node: "unix:///run/containerd/containerd.sock"})
	alive := write("alive", &shadow.Marker{ID: "alive", Holder: mark.Self("unix:///x.sock", false)})
	bare := write("bare", nil)

	got := Shadows(context.Background(), base)
	byPath := map[string]Dir{}
	for _, d := range got {
		byPath[d.Path] = d
	}
	if d, ok := byPath[dead]; !ok || !d.Removed || !strings.Contains(d.Why, "which has ended") {
		t.Errorf("the ended run's shadow: %+v, want removed", d)
	}
	if _, err := os.Lstat(dead); err == nil {
		t.Errorf("%s still there", dead)
	}
	if _, ok := byPath[alive]; ok {
		t.Errorf("the running podstep's shadow was touched: %+v", byPath[alive])
	}
	if _, err := os.Lstat(alive); err != nil {
		t.Errorf("%s: %v", alive, err)
	}
	if d, ok := byPath[bare]; !ok || d.Removed || !strings.Contains(d.Why, "no readable shadow.json") {
		t.Errorf("a dir with no marker: %+v, want kept, saying why", d)
	}
	if _, err := os.Lstat(bare); err != nil {
		t.Errorf("%s: %v", bare, err)
	}
	if d, ok := byPath[cache]; !ok || !d.Removed || !strings.Contains(d.Why, "image cache of shadow runtimes (3 MB") {
		t.Errorf("the image cache: %+v, want removed, saying what it was", d)
	}
	if _, err := os.Lstat(shadow.CacheBase(base)); err == nil {
		t.Errorf("%s still there", shadow.CacheBase(base))
	}
}
