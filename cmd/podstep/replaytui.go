package main

import (
	"fmt"
	"os"

	"github.com/fatih/color"
	"github.com/spf13/cobra"

	replaypkg "github.com/podstep/podstep/internal/replay"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/tui"
)

var _ tui.Replayer = (*replaypkg.Player)(nil)

// replayInteractive opens the TUI over the recording at path: step back
// and forth, go to a step, run to a breakpoint either way. A damaged
// recording is replayed up to the damage, then said (exit 2) once the TUI
// ends.
func replayInteractive(cmd *cobra.Command, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	defer f.Close()
	p, err := replaypkg.Open(f)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	defer p.Close()
	h := p.Header()
	info := &tui.ReplayInfo{File: path, Recorded: h.Recorded, Host: h.Host, Podstep: h.Podstep,
		Runtime: h.Runtime.Name + " " + h.Runtime.Version, Simulated: h.Runtime.Simulated}
	if h.Runtime.Name == "" {
		info.Runtime = h.Runtime.Endpoint
	}
	// A signal (SIGHUP too: the terminal closed) ends the TUI as ctrl+c
	// does, so it restores the terminal, then the exit code is 128+N.
	ctx, cancel := session.SignalContext(cmd.Context())
	defer cancel()
	_, err = tui.Run(cmd.Context(), p, tui.Options{Interrupt: ctx.Done(), Replay: info, NoColor: color.NoColor || os.Getenv("NO_COLOR") != "",
		In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
	if err != nil {
		return &session.Error{Code: ExitRuntime, Err: fmt.Errorf("terminal: %w", err)}
	}
	if session.Signalled() {
		return session.Silent(session.ExitInterrupted) // 128+N (exit.go)
	}
	p.Close() // a damage not reached is not reported
	if err := p.Damage(); err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	return nil
}
