package limit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile: a file up to the bound is read whole; larger, binary (a
// NUL byte in its first 64 KiB, not gzip) or missing is an error naming it.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string // "" : read
	}{
		{"small", file("a.json", []byte(`{"x":1}`)), 100, ""},
		{"at the bound", file("b.json", []byte(strings.Repeat("x", 100))), 100, ""},
		{"over the bound", file("c.json", []byte(strings.Repeat("x", 101))), 100, "c.json: larger than 0 MiB"},
		{"big, past 64 KiB", file("d.json", []byte(strings.Repeat("y", 3<<20))), 2 << 20, "d.json: larger than 2 MiB: expected a thing of at most 2 MiB"},
		{"NUL", file("e.bin", []byte("{\x00}")), 100, "e.bin: binary data (a NUL byte in the first 3 bytes): expected a thing"},
		{"gzip", file("f.gz", []byte{0x1f, 0x8b, 0, 0}), 100, ""},
		{"device", "/dev/zero", 1 << 20, "/dev/zero: binary data (a NUL byte in the first 65536 bytes)"},
		{"missing", filepath.Join(dir, "nope"), 100, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadFile(tc.path, tc.max, "a thing")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.want == "" && int64(len(b)) > tc.max:
				t.Errorf("read %d bytes", len(b))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
