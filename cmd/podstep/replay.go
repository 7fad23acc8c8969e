package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
)

// replayOptions are the flags of `podstep replay`.
type replayOptions struct {
	auto   bool
	output string
	html   string     // --html: write the timeline page here instead
	serve  live.Flags // --serve: the live page of the recording
	// predict is --predict: ask before each step (internal/predict).
	predict bool
	// jsonFullPod is --json-full-pod: the whole pod on every step line.
	jsonFullPod bool
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
	f.BoolVar(&o.predict, "predict", false, "before each step, ask what comes next (answers from stdin), then say right or wrong and why; a score at the end (implies --auto)")
	f.BoolVar(&o.auto, "auto", false, "print every step without stopping, as run --auto did")
	f.StringVarP(&o.output, "output", "o", report.Text, "output of --auto: text, short (one line per step) or json")
	f.BoolVar(&o.jsonFullPod, "json-full-pod", false, "with -o json: the whole pod on every step line (\"pod\"), as podstep run --json-full-pod, instead of what the step changed (\"pod_delta\"); a version 1 recording replays so anyway")
	o.serve.AddFlags(f)
	f.StringVar(&o.html, "html", "", "write the recording as one self-contained HTML timeline page to this file (prints nothing else)")
	return cmd
}

// replay prints the recording at path through the printer of run --auto.
func replay(cmd *cobra.Command, path string, o *replayOptions) error {
	if err := session.CheckOutput(o.output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if o.jsonFullPod && o.output != report.JSON {
		return session.Usagef("--json-full-pod is a shape of -o json's step lines: it goes with -o json")
	}
	if o.html != "" {
		return replayHTML(cmd, path, o.html)
	}
	if o.serve.Addr != "" {
		ctx, cancel := session.SignalContext(cmd.Context())
		defer cancel()
		return o.serve.Replay(ctx, path, cmd.ErrOrStderr())
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.predict {
		if o.output == report.JSON {
			return session.Usagef("--predict asks on stdout: it goes with -o text or short")
		}
		o.auto = true
	}
	switch {
	case !o.auto && isTerminal(stdout):
		return replayInteractive(cmd, path)
	case !o.auto:
		fmt.Fprintln(stderr, "podstep: stdout is not a terminal: replaying as --auto")
	}
	if !isTerminal(stdout) {
		noColor()
	}
	f, err := os.Open(path)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	defer f.Close()
	rd, err := record.NewReader(f)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	fmt.Fprintln(stderr, rd.Header().Banner(path))
	if o.predict {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return session.Usagef("replay %s: %v", path, err)
		}
		qo := predict.Options{In: cmd.InOrStdin(), Out: stdout, Echo: !isTerminalIn(cmd.InOrStdin())}
		if err := predict.Replay(cmd.Context(), f, report.New(stdout, o.output), qo); err != nil {
			return session.Usagef("replay %s: %v", path, err)
		}
		return nil
	}
	printer := report.New(stdout, o.output)
	printer.SetFullPod(o.jsonFullPod)
	if err := rd.Print(printer); err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	return nil
}
