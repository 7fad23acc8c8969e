package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/timeline"
)

// replayHTML writes the recording at path as the timeline page out. A
// damaged recording still gets its page, up to the damage (the page says
// where it stops), and then the usage error (exit 2); so does a page that
// cannot be written.
func replayHTML(cmd *cobra.Command, path, out string) error {
	f, err := os.Open(path)
	if err != nil {
		return usageErr("replay %s: %v", path, err)
	}
	defer f.Close()
	rd, err := record.NewReader(f)
	if err != nil {
		return usageErr("replay %s: %v", path, err)
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
	if err := outfile.Write(out, outfile.Options{Force: forceFlag(cmd), Stdout: cmd.OutOrStdout()}, page.WriteHTML); err != nil {
		return outputErr(fmt.Errorf("replay %s --html: %w", path, err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "podstep: wrote the timeline page of %s (%d steps) to %s\n", path, len(page.Steps), out)
	if damage != nil {
		return usageErr("replay %s: %v", path, damage)
	}
	return nil
}
