package record

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCreateAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.rec.gz")
	r, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	r.line(map[string]string{"type": "x"})
	r.flush()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the recording is visible before Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left in the folder: %v, want only a.rec.gz", ents)
	}
}

func TestFileName(t *testing.T) {
	for _, c := range []struct{ ns, name, uid, want string }{
		{"default", "web", "1234-ab", "default_web_1234-ab.rec.gz"},
		{"..", "a/b", "", "-_a-b_-.rec.gz"},
		{"ns", "x\x1b[2J", "u", "ns_x--2J_u.rec.gz"},
	} {
		if got := FileName(c.ns, c.name, c.uid); got != c.want {
			t.Errorf("FileName(%q, %q, %q) = %q, want %q", c.ns, c.name, c.uid, got, c.want)
		}
	}
}
