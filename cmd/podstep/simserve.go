package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/sim"
)

// newSimServeCmd is `podstep sim-serve DIR` (hidden): the simulated runtime
// in a process of its own, on DIR/sim.sock, until SIGINT or SIGTERM, or,
// with --until-stdin-closes, until its standard input closes. bench runs
// its simulated runtime so (startSimProcess): in podstep's own process
// the runtime's goroutines would share the Go scheduler with the pods' and
// count in podstep's own time and CPU.
func newSimServeCmd() *cobra.Command {
	var untilEOF bool
	cmd := &cobra.Command{
		Use:    "sim-serve DIR",
		Short:  "Serve the simulated CRI runtime on DIR/sim.sock until interrupted (for benchmarks)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(stop)
			srv, err := sim.Start(args[0])
			if err != nil {
				return runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
			}
			defer srv.Stop()
			fmt.Fprintln(cmd.OutOrStdout(), srv.Endpoint())
			if untilEOF {
				// Started by bench, in a temp dir of its own: gone with it,
				// even when podstep was killed.
				defer os.RemoveAll(args[0])
				go func() {
					io.Copy(io.Discard, cmd.InOrStdin())
					stop <- syscall.SIGTERM
				}()
			}
			<-stop
			return nil
		},
	}
	cmd.Flags().BoolVar(&untilEOF, "until-stdin-closes", false, "also stop when standard input closes (the parent went away)")
	return cmd
}

// simServeBinary is the podstep executable startSimProcess runs (the
// tests' is the test binary, so they name the podstep they built).
var simServeBinary = os.Executable

// startSimProcess starts the simulated runtime as `podstep sim-serve` in
// a process of its own and its own process group (a Ctrl-C on the
// terminal reaches podstep, which still tears its pods down through it),
// tied to podstep by a pipe on its standard input: when podstep exits,
// however it exits, the pipe closes and the runtime stops.
func startSimProcess(opts cri.Options, why string) (*conn, error) {
	exe, err := simServeBinary()
	if err != nil {
		return nil, runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
	}
	dir, err := os.MkdirTemp("", "podstep-sim-")
	if err != nil {
		return nil, runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
	}
	cmd := exec.Command(exe, "sim-serve", "--until-stdin-closes", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err == nil {
		var out io.ReadCloser
		if out, err = cmd.StdoutPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				var endpoint string
				if endpoint, err = firstLine(out, 10*time.Second); err == nil {
					var c *cri.Client
					if c, err = cri.Dial(endpoint, "", opts); err == nil {
						return &conn{client: c, info: render.Runtime{Endpoint: endpoint, Simulated: true, Why: why},
							stop: func() { c.Close(); stopChild(cmd, stdin); os.RemoveAll(dir) }}, nil
					}
				}
				stopChild(cmd, stdin)
			}
		}
	}
	os.RemoveAll(dir)
	return nil, runtimeErr(fmt.Errorf("start simulated runtime (%s sim-serve): %w", exe, err))
}

// firstLine reads the child's first line of output: its endpoint.
func firstLine(r io.Reader, timeout time.Duration) (string, error) {
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-line:
		if !strings.HasPrefix(s, "unix://") {
			return "", fmt.Errorf("it printed %q, not its endpoint", s)
		}
		return s, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no endpoint within %s", timeout)
	}
}

// stopChild closes the child's standard input, which stops it, and waits
// for it (killing it after 5 s).
func stopChild(cmd *exec.Cmd, stdin io.Closer) {
	stdin.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
