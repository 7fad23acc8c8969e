package sim

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
)

// Process is the simulated runtime in a process of its own (StartProcess).
type Process struct {
	Endpoint string // unix:///…/sim.sock
	cmd      *exec.Cmd
	stdin    io.Closer
	dir      string
}

// StartProcess starts the simulated runtime as `exe sim-serve
// --until-stdin-closes DIR` (Serve) in a process of its own and its own
// process group (a Ctrl-C on the terminal reaches podstep, which still
// tears its pods down through it), tied to podstep by a pipe on its
// standard input: when podstep exits, however it exits, the pipe closes
// and the runtime stops. bench runs its simulated runtime so: in podstep's
// own process the runtime's goroutines would share the Go scheduler with
// the pods' and count in podstep's own time and CPU.
func StartProcess(exe string, dirs ...string) (*Process, error) {
	return StartProcessWith(exe, nil, dirs...)
}

// StartProcessWith is StartProcess with more sim-serve flags (bench: the
// image config flags, so that its simulated pulls read image configs as
// run's do).
func StartProcessWith(exe string, flags []string, dirs ...string) (*Process, error) {
	dir, err := os.MkdirTemp("", "podstep-sim-")
	if err != nil {
		return nil, fmt.Errorf("start simulated runtime: %w", err)
	}
	args := append([]string{"sim-serve", "--until-stdin-closes"}, flags...)
	for _, d := range dirs {
		args = append(args, "--allow-dir", d)
	}
	cmd := exec.Command(exe, append(args, dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	p := &Process{cmd: cmd, dir: dir}
	if err := p.start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start simulated runtime (%s sim-serve): %w", exe, err)
	}
	return p, nil
}

func (p *Process) start() error {
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.stdin = stdin
	if p.Endpoint, err = FirstLine(out, 10*time.Second); err != nil {
		p.stopChild()
		return err
	}
	return nil
}

// Stop closes the child's standard input, which stops it, waits for it
// (killing it after 5 s) and removes its dir.
func (p *Process) Stop() {
	p.stopChild()
	os.RemoveAll(p.dir)
}

func (p *Process) stopChild() {
	p.stdin.Close()
	done := make(chan struct{})
	// Its exit status does not matter: Stop reports nothing, the dir goes anyway.
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill() // fails only when it has just exited
		<-done
	}
}

// FirstLine reads a sim-serve child's first line of output: its endpoint.
func FirstLine(r io.Reader, timeout time.Duration) (string, error) {
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, r) // keep the child's output pipe drained; ends when it exits
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

// Serve is `podstep sim-serve DIR`: the simulated runtime on DIR/sim.sock
// with o (requests may name paths in DIR and o.Dirs; o.ImageConfig reads
// the pulled images' configs, one Fetcher for all the pods it serves), its
// endpoint printed as the first line of out, until SIGINT or SIGTERM,
// or, with untilEOF, until in closes (then DIR is removed: StartProcess
// made it for the child alone, and it goes even when podstep was killed).
func Serve(dir string, o Options, in io.Reader, out io.Writer, untilEOF bool) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	srv, err := StartWithOptions(dir, o)
	if err != nil {
		return fmt.Errorf("start simulated runtime: %w", err)
	}
	defer srv.Stop()
	fmt.Fprintln(out, srv.Endpoint())
	if untilEOF {
		defer os.RemoveAll(dir)
		go func() {
			_, _ = io.Copy(io.Discard, in) // a read error ends stdin as EOF does
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	return nil
}
