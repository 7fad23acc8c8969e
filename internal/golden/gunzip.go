package golden

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"
)

// ReadFile is the one test helper that reads a file, gunzipped when it is
// gzip (a recording FILE.gz); a .gz file that is not gzip fails t.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	} else if strings.HasSuffix(path, ".gz") {
		t.Fatalf("%s is not gzip", path)
	}
	return data
}
