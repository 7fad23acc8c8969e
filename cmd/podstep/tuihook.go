package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/tui"
)

// runInteractive runs the pod in the TUI, one keypress per step. When the
// TUI ends it tears the pod down (unless the user kept it), printing each
// teardown step as a plain line, then a one-line summary; exit codes are
// those of --auto.
// ctx is cancelled by a signal (SIGHUP included: a closed terminal), which
// ends the TUI and tears the pod down.
func runInteractive(ctx context.Context, cmd *cobra.Command, g *globalOptions, o *runOptions, eng *steps.Engine, c *session.Conn, sig *session.Interrupts, rec *session.Recording) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	res, tuiErr := tui.Run(ctx, eng, tui.Options{
		Runtime: c.Runtime, Breaks: o.BreakStages(), Keep: o.keep,
		NoColor: g.noColor, In: cmd.InOrStdin(), Out: stdout,
		Cluster: o.ClusterSource(eng),
		Predict: o.predict, Scenario: scenarioOf(o.Scenario),
	})

	// The TUI is gone: from here on, plain lines.
	printer := report.New(stdout, report.Text)
	printer.SetPod(session.PodName(eng))
	eng.Subscribe(printer.Observe)
	var created time.Duration
	for _, s := range eng.Steps() {
		created += s.Duration
	}
	teardown := res.Teardown || tuiErr != nil
	sum := session.Summarize(eng, c.Client.Calls(), created, !teardown)
	if tuiErr != nil {
		fmt.Fprintln(stderr, "podstep: terminal:", tuiErr)
	}
	if teardown {
		fmt.Fprintf(stdout, "podstep: tearing down pod %s\n", sum.Pod)
	}
	if res.Interrupted {
		// ctrl+c in the TUI was the first interrupt: the next one abandons teardown.
		sig.Interrupt()
	}
	code, msg := o.End(ctx, eng, &sum, teardown, res.Interrupted, printer, rec, stderr)
	if score := res.Score.String(); score != "" {
		fmt.Fprintln(stdout, score)
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	if tuiErr != nil && code == ExitOK {
		code = ExitRuntime
	}
	return session.Silent(code)
}
