package record

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CreateAtomic creates a recording that appears at path only once it is
// closed: it is written into a temporary file beside it (".NAME.*",
// mode 0600: a recording holds a pod's calls) and renamed into place by
// Close (or Finish), so a reader of the folder never sees half of one.
// A name ending in ".gz" is written gzip-compressed. If writing failed,
// the temporary file is removed and Close returns the error.
func CreateAtomic(path string) (*Recorder, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create recording: %w", err)
	}
	r := New(f, strings.HasSuffix(path, ".gz"))
	r.closer = &renamer{f: f, path: path, r: r}
	return r, nil
}

// renamer closes the temporary file and renames it into place, or removes
// it when the recording had a write error.
type renamer struct {
	f    *os.File
	path string
	r    *Recorder // its err is read with r.mu held (Close holds it)
}

func (n *renamer) Close() error {
	err := n.f.Close()
	if err == nil && n.r.err == nil {
		err = os.Rename(n.f.Name(), n.path)
	}
	if err != nil || n.r.err != nil {
		os.Remove(n.f.Name())
	}
	return err
}

// FileName is the name of a pod's recording in a folder of recordings
// (podstep proxy --record-dir): NAMESPACE_NAME_UID.rec.gz, each part kept
// to the characters of a Kubernetes name (anything else becomes "-"), so
// that a name from the runtime cannot leave the folder.
func FileName(namespace, name, uid string) string {
	return safeName(namespace) + "_" + safeName(name) + "_" + safeName(uid) + ".rec.gz"
}

func safeName(s string) string {
	if s == "" {
		return "-"
	}
	b := []byte(s)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '-'
		}
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "-"
}

// nameByte says whether c may be in a name part as it is.
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}
