package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
)

// replayOptions are the flags of `podstep replay`.
type replayOptions struct {
	session.ReplayCommand
	auto  bool
	serve live.Flags // --serve: the live page of the recording
}

func newReplayCmd() *cobra.Command {
	o := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a recording made with run --record: no runtime, no root, no network",
		Long: `replay reads a recording made with podstep run --record FILE (plain or .gz). It
contacts no runtime, needs no root and no network.

On a terminal it opens the TUI over the recording, with the run's panes and keys plus
what only a replay can do: p or ← steps back, g N goes to step N (g 0: the start),
c runs forward to a breakpoint and C back to one; r (retry) and teardown do nothing.

With --auto (or when stdout is not a terminal) it prints what the run printed: the
start line, one line or JSON object per step and the summary, exactly as
run --auto [-o json] did.

Exit codes: 0 when the recording was read to its summary, whatever the recorded run's
own outcome (its exit code is the summary's exit_code); 2 when the file is not a
recording, of a newer format, or damaged or cut off (what was readable is printed
first, then where and why it stopped).`,
		Example: `  podstep run --auto -f pod.yaml --record run.rec.gz
  podstep replay run.rec.gz
  podstep replay run.rec.gz --auto
  podstep replay run.rec.gz --auto -o json | jq .
  podstep replay run.rec.gz --html run.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return session.Usagef("replay takes one recording FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return replay(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Predict, "predict", false, "before each step, ask what comes next (answers from stdin), then say right or wrong and why; a score at the end (implies --auto)")
	f.BoolVar(&o.auto, "auto", false, "print every step without stopping, as run --auto did")
	f.StringVarP(&o.Output, "output", "o", report.Text, "output of --auto: text, short (one line per step) or json")
	f.BoolVar(&o.JSONFullPod, "json-full-pod", false, "with -o json: the whole pod on every step line (\"pod\"), as podstep run --json-full-pod, instead of what the step changed (\"pod_delta\"); a version 1 recording replays so anyway")
	o.serve.AddFlags(f)
	f.StringVar(&o.HTML, "html", "", "write the recording as one self-contained HTML timeline page to this file (prints nothing else)")
	return cmd
}

// replay replays the recording at path: --html's page, --serve's live
// page, the TUI on a terminal, else the printer of run --auto.
func replay(cmd *cobra.Command, path string, o *replayOptions) error {
	o.Path, o.Force = path, forceFlag(cmd)
	o.Stdin, o.Stdout, o.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := o.Check(); err != nil {
		return err
	}
	if o.HTML != "" {
		return o.WriteHTML()
	}
	if o.serve.Addr != "" {
		ctx, cancel := session.SignalContext(cmd.Context())
		defer cancel()
		return o.serve.Replay(ctx, path, o.Stderr)
	}
	if o.Predict {
		o.auto = true
	}
	switch {
	case !o.auto && isTerminal(o.Stdout):
		return replayInteractive(cmd, path)
	case !o.auto:
		fmt.Fprintln(o.Stderr, "podstep: stdout is not a terminal: replaying as --auto")
	}
	if !isTerminal(o.Stdout) {
		noColor()
	}
	o.EchoAnswers = !isTerminalIn(o.Stdin)
	return o.Print(cmd.Context())
}
