package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/timeline"
)

// replayHTML writes the recording at path as the timeline page out
// (timeline.WriteFile). A damaged recording still gets its page, then the
// usage error (exit 2); so does a page that cannot be written.
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
	page, damage, err := timeline.WriteFile(filepath.Base(path), rd, out, outfile.Options{Force: forceFlag(cmd), Stdout: cmd.OutOrStdout()})
	if err != nil {
		return session.OutputErr(fmt.Errorf("replay %s --html: %w", path, err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "podstep: wrote the timeline page of %s (%d steps) to %s\n", path, len(page.Steps), out)
	if damage != nil {
		return session.Usagef("replay %s: %v", path, damage)
	}
	return nil
}
