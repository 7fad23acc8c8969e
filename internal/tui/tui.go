package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

// Options configure Run.
type Options struct {
	// Runtime names the runtime in the header (endpoint, simulated or not).
	Runtime render.Runtime
	// Breaks are stages to stop before (--break).
	Breaks []steps.Stage
	// BreakSteps are step names to stop before (--break start/app), the
	// container part a glob (create/*): steps.MatchName.
	BreakSteps []string
	// Keep makes "keep the pod" the default answer when quitting (--keep).
	Keep bool
	// NoColor drops colours (--no-color); NO_COLOR in the environment does too.
	NoColor bool
	// In and Out are the terminal (nil: stdin and stdout).
	In  io.Reader
	Out io.Writer
	// Now is the clock for elapsed times (nil: time.Now).
	Now func() time.Time
	// Replay says what a Replayer engine replays, for the header.
	Replay *ReplayInfo
	// Interrupt, once closed, ends the TUI as ctrl+c does (a signal the
	// command caught: SIGHUP too), restoring the terminal.
	Interrupt <-chan struct{}
	// Cluster reads what the cluster says about the real pod (run --pod):
	// K shows it beside podstep's step. nil: no cluster, no K.
	Cluster ClusterSource
	// Predict is predict mode (run --predict): a question before each step
	// (predict.go); Scenario, when the pod is a built-in scenario, adds
	// its outcome to the choices and its lesson to the verdict.
	Predict  bool
	Scenario *scenario.Scenario
	// ServeURL is the live page's address (--serve), shown on the status
	// line while nothing else is ("" without --serve).
	ServeURL string
}

// Result is how the TUI ended.
type Result struct {
	// Teardown is true when the pod must be torn down (the default on quit,
	// always after ctrl+c or a signal).
	Teardown bool
	// Interrupted is true after ctrl+c, SIGINT/SIGTERM or a cancelled context.
	Interrupted bool
	// Pod is the pod's state when the TUI ended.
	Pod podstate.Snapshot
	// Score is predict mode's score (zero without --predict).
	Score predict.Score
}

// Run runs the TUI on eng until the user quits. It returns once no engine
// call is running any more and the TUI no longer subscribes to eng's
// events, so the caller may tear the pod down at once.
func Run(ctx context.Context, eng Engine, o Options) (Result, error) {
	// The TUI writes its own control sequences: to the terminal itself, not
	// through the sanitising writer a command may have wrapped it in. Its
	// frames are sanitised whole instead (view.go).
	o.Out = safe.Raw(o.Out)
	m := newModel(ctx, eng, o)
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if o.In != nil {
		popts = append(popts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		popts = append(popts, tea.WithOutput(o.Out))
	}
	if o.NoColor || os.Getenv("NO_COLOR") != "" {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	} else if o.Out == nil || o.Out == io.Writer(os.Stdout) {
		// lipgloss's package init already ran colorprofile.Detect on
		// os.Stdout and the environment (lipgloss.Writer), as the program
		// would again: reuse that. Inside tmux each Detect execs
		// `tmux info`, 3-20 ms before the first frame (issue 14).
		popts = append(popts, tea.WithColorProfile(lipgloss.Writer.Profile))
	}
	prog := tea.NewProgram(m, popts...)
	if o.Interrupt != nil {
		ended := make(chan struct{})
		defer close(ended)
		go func() {
			select {
			case <-o.Interrupt:
				prog.Send(tea.InterruptMsg{})
			case <-ended:
			}
		}()
	}
	_, err := prog.Run()
	m.close()
	res := m.result
	res.Pod = eng.PodState()
	res.Score = m.pred.score
	if !m.decided || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, tea.ErrProgramKilled) || ctx.Err() != nil {
		// A signal, or the context ended: tear down, as --auto does.
		res.Teardown, res.Interrupted = true, true
		err = nil
	}
	return res, err
}

// runner runs engine calls off the UI goroutine.
type runner struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (r *runner) setCancel(c context.CancelFunc) {
	r.mu.Lock()
	r.cancel = c
	r.mu.Unlock()
}

func (r *runner) cancelRun() {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
}

// close cancels a running engine call and waits for it to return,
// draining the events meanwhile (the program no longer reads them), then
// ends the subscription.
func (m *model) close() {
	if !m.tearing {
		// A teardown step runs to its end (a second signal abandons it:
		// session.Interrupts).
		m.run.cancelRun()
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-m.events:
			case <-stop:
				return
			}
		}
	}()
	m.run.wg.Wait()
	close(stop)
	m.unsubscribe()
}
