package diff

import (
	"fmt"
	"io"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
)

// ExitDiffers is podstep diff's exit code when the recordings differ after
// normalisation.
const ExitDiffers = 1

// Command is `podstep diff A B` with its flags read: cmd/podstep fills it
// and calls Execute.
type Command struct {
	A, B          string // the recordings' paths
	Output        string // text or json
	DifferentPods bool   // --different-pods: recordings of different pod specs warn instead of failing
	Stdout        io.Writer
	Stderr        io.Writer
}

// Execute loads both recordings, compares them and writes the result;
// it returns session.Silent(ExitDiffers) when they differ, and a usage
// error (exit 2) for a file that is no recording, a damaged one, or two
// recordings of different manifests without DifferentPods.
func (c Command) Execute() error {
	if err := session.CheckOutput(c.Output, report.Text, report.JSON); err != nil {
		return err
	}
	a, err := Load(c.A)
	if err != nil {
		return session.Usagef("diff: %v", err)
	}
	b, err := Load(c.B)
	if err != nil {
		return session.Usagef("diff: %v", err)
	}
	res := Compare(a, b)
	if !res.Manifest.Same {
		if !c.DifferentPods && a.FromManifest && b.FromManifest {
			return session.Usagef("diff %s %s: %s (they are not recordings of the same manifest; --different-pods compares them anyway)", c.A, c.B, res.Manifest.Why)
		}
		fmt.Fprintln(c.Stderr, "warning:", res.Manifest.Why)
	}
	if c.Output == report.JSON {
		err = res.WriteJSON(c.Stdout)
	} else {
		err = res.WriteText(c.Stdout)
	}
	if err != nil {
		return err
	}
	if res.Differs() {
		return session.Silent(ExitDiffers)
	}
	return nil
}
