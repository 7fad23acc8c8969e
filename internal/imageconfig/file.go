package imageconfig

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/podstep/podstep/internal/fsperm"
)

// DefaultCacheDir is podstep's cache of image configs: the user's cache
// directory (XDG_CACHE_HOME, else ~/.cache) /podstep/image-config, "" when
// the user has none.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil || d == "" {
		return ""
	}
	return filepath.Join(d, "podstep", "image-config")
}

// writeFile writes v as JSON to path in dir (made 0700, private), via a
// temp file renamed over it: a reader sees the old file or the new one.
func writeFile(dir, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := fsperm.MkdirAll(dir, 0o700, -1); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; left only on failure
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
