package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// Entry is one thing under a volume's directory.
type Entry struct {
	// Path is relative to the volume's directory, with the atomic
	// writer's timestamp masked when Masked is used.
	Path string `json:"path"`
	// Type is "file", "dir" or "symlink".
	Type string `json:"type"`
	// Mode is the permission bits (with setgid/sticky) of files and dirs.
	Mode fs.FileMode `json:"mode"`
	// Target is a symlink's target.
	Target string `json:"target,omitempty"`
	// Size is a file's length in bytes.
	Size int64 `json:"size,omitempty"`
}

// List walks dir (not following symlinks) and returns every entry below
// it, in lexical order.
func List(dir string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := Entry{Path: rel, Mode: info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSetuid | fs.ModeSticky)}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type, e.Mode = "symlink", 0
			e.Target, _ = os.Readlink(p)
		case info.IsDir():
			e.Type = "dir"
		default:
			e.Type = "file"
			e.Size = info.Size()
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

var timestampDir = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+`)
})

// MaskTimestamp replaces the atomic writer's timestamped dir name
// (..2006_01_02_15_04_05.<random>) in s with "..<timestamp>".
func MaskTimestamp(s string) string {
	return timestampDir().ReplaceAllString(s, "..<timestamp>")
}
