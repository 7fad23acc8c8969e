package session

import (
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/crictl"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// PlanCommand is `podstep plan` with its flags read: cmd/podstep fills it
// and calls Execute. Nothing is sent to a runtime.
type PlanCommand struct {
	Options        // the pod's flags; NoTokens is set by Execute
	Output  string // yaml or json
	// OutputGiven: -o was given; with CrictlDir, the plan is printed too.
	OutputGiven bool
	CrictlDir   string // --crictl: write crictl-ready configs here
	Force       bool   // --force: an output may replace what is not a regular file
	Stdin       io.Reader
	Stdout      io.Writer
}

// Execute checks the flags, reads the manifest, plans its steps with the
// engine (steps.New, no runtime) and prints them, or writes --crictl's
// configs and lists them.
func (c *PlanCommand) Execute() error {
	c.NoTokens = true
	if err := c.Validate(); err != nil {
		return err
	}
	if err := CheckOutput(c.Output, "yaml", "json"); err != nil {
		return err
	}
	b, err := c.LoadManifest(c.Stdin)
	if err != nil {
		return err
	}
	eng := steps.New(b, nil, c.Engine(render.Runtime{}))
	if c.CrictlDir != "" {
		wrote, err := crictl.Write(c.CrictlDir, eng.Steps(), c.Stderr, c.Force)
		if err != nil {
			return OutputErr(fmt.Errorf("--crictl: %w", err))
		}
		fmt.Fprintln(c.Stdout, strings.Join(wrote, "\n"))
		if !c.OutputGiven {
			return nil // what it wrote, and only that; -o also prints the plan
		}
	}
	return report.WritePlan(c.Stdout, eng.Pod(), eng.Steps(), c.Output, b.Notes, eng.Stops()...)
}
