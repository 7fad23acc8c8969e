package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/timeline"
)

// replayHTML writes the recording at path as the timeline page out. A
// damaged recording still gets its page, up to the damage (the page says
// where it stops), and then the usage error (exit 2); so does a page that
// cannot be written.
func replayHTML(cmd *cobra.Command, path, out string) error {
	f, err := os.Open(path)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	defer f.Close()
	rd, err := record.NewReader(f)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	page := timeline.New(filepath.Base(path), rd.Header())
	var damage error
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
	if err := writeFileAtomic(out, page.WriteHTML); err != nil {
		return session.Usagef("replay %s --html: %v", path, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "podstep: wrote the timeline page of %s (%d steps) to %s\n", path, len(page.Steps), out)
	if damage != nil {
		return session.Usagef("replay %s: %v", path, damage)
	}
	return nil
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
