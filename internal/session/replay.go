package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/timeline"
)

// ReplayCommand is `podstep replay FILE` with its flags read: cmd/podstep
// fills it, calls Check, and then WriteHTML (--html), Print (--auto,
// --predict) or a frontend of its own (the TUI, the live page).
type ReplayCommand struct {
	Path        string // the recording
	Output      string // text, short or json (--auto)
	JSONFullPod bool   // --json-full-pod: the whole pod on every step line
	Predict     bool   // --predict: ask before each step (internal/predict)
	HTML        string // --html: write the timeline page here instead
	Force       bool   // --force: the page may replace what is not a regular file
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
	// EchoAnswers: --predict echoes the answers it reads (stdin is no
	// terminal that shows them).
	EchoAnswers bool
}

// Check checks -o and --json-full-pod (a usage error).
func (c *ReplayCommand) Check() error {
	if err := CheckOutput(c.Output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if c.JSONFullPod && c.Output != report.JSON {
		return Usagef("--json-full-pod is a shape of -o json's step lines: it goes with -o json")
	}
	return nil
}

// open opens the recording and reads its header.
func (c *ReplayCommand) open() (*os.File, *record.Reader, error) {
	f, err := os.Open(c.Path)
	if err != nil {
		return nil, nil, Usagef("replay %s: %v", c.Path, err)
	}
	rd, err := record.NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, Usagef("replay %s: %v", c.Path, err)
	}
	return f, rd, nil
}

// WriteHTML writes the recording as the timeline page c.HTML
// (timeline.WriteFile). A damaged recording still gets its page, then the
// usage error (exit 2); so does a page that cannot be written.
func (c *ReplayCommand) WriteHTML() error {
	f, rd, err := c.open()
	if err != nil {
		return err
	}
	defer f.Close()
	page, damage, err := timeline.WriteFile(filepath.Base(c.Path), rd, c.HTML, outfile.Options{Force: c.Force, Stdout: c.Stdout})
	if err != nil {
		return OutputErr(fmt.Errorf("replay %s --html: %w", c.Path, err))
	}
	fmt.Fprintf(c.Stderr, "podstep: wrote the timeline page of %s (%d steps) to %s\n", c.Path, len(page.Steps), c.HTML)
	if damage != nil {
		return Usagef("replay %s: %v", c.Path, damage)
	}
	return nil
}

// Print prints the recording through the printer of run --auto, as the
// run printed it (with Predict: asking before each step, then a score).
// A damaged or cut-off recording is printed up to the damage, then a
// usage error says where and why.
func (c *ReplayCommand) Print(ctx context.Context) error {
	if c.Predict && c.Output == report.JSON {
		return Usagef("--predict asks on stdout: it goes with -o text or short")
	}
	f, rd, err := c.open()
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintln(c.Stderr, rd.Header().Banner(c.Path))
	if c.Predict {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return Usagef("replay %s: %v", c.Path, err)
		}
		qo := predict.Options{In: c.Stdin, Out: c.Stdout, Echo: c.EchoAnswers}
		if err := predict.Replay(ctx, f, report.New(c.Stdout, c.Output), qo); err != nil {
			return Usagef("replay %s: %v", c.Path, err)
		}
		return nil
	}
	printer := report.New(c.Stdout, c.Output)
	printer.SetFullPod(c.JSONFullPod)
	if err := rd.Print(printer); err != nil {
		return Usagef("replay %s: %v", c.Path, err)
	}
	return nil
}
