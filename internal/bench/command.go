package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/session"
)

// Command is `podstep bench` with its flags read: cmd/podstep fills it
// and calls Execute, which checks it, runs the pods and writes the report.
type Command struct {
	Run        session.Options   // the pod's flags, --root-dir and --log-dir included
	Flags      Flags             // bench's own
	Endpoints  session.Endpoints // the runtime; SimExe is the podstep binary a simulated runtime runs in
	Image      imageconfig.Flags // --image-config and its kin, for the simulated runtime's process
	ImageGiven bool              // --image-config was given
	Output     string            // text or json
	Stdin      io.Reader         // -f -
	Stdout     io.Writer
	Stderr     io.Writer
}

// Execute checks the flags (a usage error before anything is read or
// sent), connects to the runtime, measures the pods at each level, writes
// the report (with the comparison against --compare's baseline) and
// returns the exit code as session.Silent: 1 on a failed pod or a
// regression, 4 when something was left, 130 on an interrupt.
func (c *Command) Execute(ctx context.Context) error {
	if err := c.Run.Validate(); err != nil {
		return err
	}
	levels, err := Check(c.Flags)
	if err != nil {
		return session.Usagef("%v", err)
	}
	simFlags, err := SimFlags(c.Image, c.ImageGiven)
	if err != nil {
		return session.Usagef("%v", err)
	}
	if err := session.CheckOutput(c.Output, "text", "json"); err != nil {
		return err
	}
	var base *Result
	if c.Flags.Compare != "" {
		if base, err = ReadBaseline(c.Flags.Compare); err != nil {
			return session.Usagef("--compare: %v", err)
		}
	}
	bundle, err := c.Run.LoadManifest(c.Stdin)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := session.WatchSignals(cancel, c.Stderr)
	defer sig.Stop()
	// A simulated runtime runs in a process of its own: its work is not
	// podstep's (sim.StartProcess).
	ep := c.Endpoints
	ep.SimDirs = c.Run.SimDirs()
	ep.SimFlags = simFlags
	conn, err := session.Connect(ctx, ep)
	if err != nil {
		return sig.NotStarted(err)
	}
	defer conn.Stop()
	if err := c.Run.UseRuntime(conn); err != nil {
		return err
	}

	b := NewRunner(ctx, Config{Bundle: bundle, Engine: c.Run.Engine(render.Runtime{Endpoint: conn.Runtime.Endpoint}), Conn: conn,
		N: c.Flags.N, Warmup: c.Flags.Warmup, Levels: levels, Stderr: c.Stderr})
	sig.WatchMany(b.LeftBehind)
	if conn.Runtime.Simulated && c.Output != "text" {
		// The text report says it first; JSON has it as a field, so here once.
		fmt.Fprintln(c.Stderr, "podstep: "+SimulatedNote)
	}
	res := b.Run()
	var cmp *Comparison
	if base != nil && len(res.Levels) > 0 {
		cmp = Compare(base, res, c.Flags.Threshold, float64(c.Flags.MinChange.Microseconds())/1000)
	}
	if err := Write(c.Stdout, c.Output, res, cmp); err != nil {
		return err
	}
	code := b.ExitCode(sig.Interrupted())
	if code == session.ExitInterrupted {
		fmt.Fprintf(c.Stderr, "podstep: interrupted: torn down (%d pods measured)\n", Measured(res))
	}
	if code == session.ExitOK && cmp != nil && cmp.Regressions() > 0 {
		fmt.Fprintf(c.Stderr, "podstep: %d regression(s) against %s\n", cmp.Regressions(), c.Flags.Compare)
		code = session.ExitPodFailed
	}
	return session.Silent(code)
}
