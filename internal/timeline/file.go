package timeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/podstep/podstep/internal/record"
)

// WriteFile writes the recording read from rd (named source) as the page
// at out, atomically. A damaged recording still gets its page, up to the
// damage (the page says where it stops), returned as damage; err is a page
// that could not be written.
func WriteFile(source string, rd *record.Reader, out string) (page *Page, damage, err error) {
	page = New(source, rd.Header())
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			damage = err
			page.Damage = err.Error()
			break
		}
		page.Add(ev)
	}
	return page, damage, writeFileAtomic(out, page.WriteHTML)
}

// writeFileAtomic writes out through write into a temporary file beside it,
// then renames it into place: a failed write leaves nothing half written.
func writeFileAtomic(out string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // its path is the temporary file's
		}
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
