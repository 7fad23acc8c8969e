package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// running is the keypress's run under way, if any.
type running struct {
	busy bool
	// op is what runs: "next", "continue" or "retry"; start when the
	// key was pressed; id the step running (0: none); method the CRI call
	// in flight.
	op     string
	start  time.Time
	id     int
	method string
}

// model is the root bubbletea model. It is used through a pointer: the
// engine runner shares its WaitGroup with Run.
type model struct {
	eng  Engine
	opts Options
	ctx  context.Context
	*common
	help help.Model
	spin spinner.Model

	// events carries engine events (subscribe) and, after them, each run's
	// runDoneMsg, so the program sees a run end only after its events.
	events      chan tea.Msg
	unsubscribe func()

	// What the engine said last. While a step runs they are updated from
	// events only: eng.Steps() rebuilds requests from state the running
	// step is changing.
	steps  []steps.Step
	pod    podstate.Snapshot
	last   lastChange // what the last step changed: highlighted until the next one starts
	lastID int        // the last step that ran
	nextID int        // the step Next would run (0: none)
	ver    int        // bumped whenever steps change (detail cache key)

	plan planModel
	pane stepModel

	run     *runner
	running running

	// ui is what the keys do now (mode.go); screen what the body shows.
	ui      uiMode
	screen  screen
	tl      timelineModel
	decided bool // the user chose how to quit
	result  Result
	flash   string

	// replay is the replay's sub-model (replay.go); nil when live.
	replay *replayModel
}

// newModel builds the model and subscribes it to eng's events; close ends that.
func newModel(ctx context.Context, eng Engine, o Options) *model {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	st := newStyles()
	h := help.New()
	h.Styles = st.Help
	h.SetWidth(78)
	c := &common{
		width: 80, height: 24, st: st, now: now, fmtDur: render.Duration,
		keys: newKeyMap(), rkeys: newReplayKeys(), ckeys: newConfirmKeys(),
	}
	m := &model{
		eng: eng, opts: o, ctx: ctx, events: make(chan tea.Msg, 1024), common: c, help: h,
		spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(st.Running)),
		plan: planModel{common: c, stageBreak: map[steps.Stage]bool{}, stepBreak: map[int]bool{}},
		run:  &runner{},
		tl:   timelineModel{common: c, top: -1},
	}
	if rp, ok := eng.(Replayer); ok {
		m.replay = &replayModel{common: c, rp: rp, info: o.Replay}
	}
	for _, s := range o.Breaks {
		if !m.plan.stageBreak[s] {
			m.plan.stageBreak[s] = eng.ToggleBreakStage(s)
		}
	}
	m.subscribe()
	m.refresh()
	m.selectStep(m.nextID)
	return m
}

// Init starts listening to the engine.
func (m *model) Init() tea.Cmd { return tea.Batch(m.waitEvent(), m.waitLoaded(), m.waitLive()) }

// waitEvent delivers the next engine event; Update re-arms it.
func (m *model) waitEvent() tea.Cmd {
	ch := m.events
	return func() tea.Msg { return <-ch }
}

// refresh re-reads the engine. Only call it while no step runs.
func (m *model) refresh() {
	var id int
	if r, ok := m.plan.cursorRow(); ok && r.step >= 0 {
		id = m.steps[r.step].ID
	}
	m.steps = cleanSteps(m.eng.Steps())
	m.pod = m.eng.PodState()
	m.nextID = 0
	if s, ok := m.eng.NextStep(); ok {
		m.nextID = s.ID
	}
	m.ver++
	m.plan.buildRows(m.steps)
	if id > 0 {
		m.selectStep(id)
	}
	m.loadLog()
}

// buildRows lists the plan's rows: each stage's header, then its steps.
func (m *planModel) buildRows(all []steps.Step) {
	m.rows = m.rows[:0]
	var stage steps.Stage
	for i, s := range all {
		if i == 0 || s.Stage != stage {
			stage = s.Stage
			m.rows = append(m.rows, row{stage: stage, step: -1})
		}
		m.rows = append(m.rows, row{stage: stage, step: i})
	}
	if m.cursor >= len(m.rows) {
		m.cursor = len(m.rows) - 1
	}
}

// cursorRow is the row under the cursor.
func (m *planModel) cursorRow() (row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return row{}, false
	}
	return m.rows[m.cursor], true
}

// selected is the step the step pane shows: the cursor's step, or the
// first step of the stage whose header the cursor is on.
func (m *model) selected() (steps.Step, bool) {
	r, ok := m.plan.cursorRow()
	if !ok {
		return steps.Step{}, false
	}
	if r.step < 0 {
		if m.plan.cursor+1 < len(m.plan.rows) {
			r = m.plan.rows[m.plan.cursor+1]
		} else {
			return steps.Step{}, false
		}
	}
	return m.steps[r.step], true
}

// selectStep puts the cursor on step id.
func (m *model) selectStep(id int) {
	for i, r := range m.plan.rows {
		if r.step >= 0 && m.steps[r.step].ID == id {
			if m.plan.cursor != i {
				m.pane.scroll = 0
			}
			m.plan.cursor = i
			return
		}
	}
}

// setStep replaces one step with the engine's snapshot of it.
func (m *model) setStep(s steps.Step) {
	if s.ID < 1 || s.ID > len(m.steps) {
		return
	}
	m.steps[s.ID-1] = s
	m.ver++
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width - 2)
		return m, nil
	case tea.KeyPressMsg:
		cmd := m.key(msg)
		return m, cmd
	case engineEventMsg:
		m.event(msg.ev)
		cmd := m.waitEvent()
		return m, cmd
	case runDoneMsg:
		return m, tea.Batch(m.runDone(msg), m.waitEvent())
	case liveMsg:
		cmd := m.live()
		return m, cmd
	case spinner.TickMsg:
		if !m.running.busy {
			return m, nil // let the spinner stop
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	}
	return m, nil
}

// event applies one engine event while a step runs.
func (m *model) event(ev steps.Event) {
	switch ev.Kind {
	case steps.StepStarted:
		m.last = lastChange{}
		m.running.id = ev.Step.ID
		m.running.method = ""
		m.setStep(ev.Step)
		m.selectStep(ev.Step.ID)
	case steps.CallSent:
		m.running.method = line(ev.Method)
	case steps.CallDone:
		m.running.method = ""
		if ev.Step.ID > 0 {
			m.setStep(ev.Step)
		}
	case steps.StepDone:
		m.setStep(ev.Step)
		if ev.Pod != nil {
			m.pod = *ev.Pod
			m.last = newLastChange(ev.Step, len(ev.Pod.Events))
		}
		m.lastID = ev.Step.ID
		m.running.id = 0
	}
}

// Messages that stop being true once the run ends.
const (
	flashCancelling = "cancelling the running call…"
	flashBusy       = "a step is running: esc cancels it"
)

// start runs op ("next", "continue" or "retry") in a command.
func (m *model) start(op string) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.run.setCancel(cancel)
	m.running.busy, m.running.op, m.running.start, m.flash = true, op, m.now(), ""
	if s, ok := m.eng.NextStep(); ok {
		m.running.id = s.ID
		m.selectStep(s.ID)
	}
	eng, r, ch := m.eng, m.run, m.events
	r.wg.Add(1)
	work := func() tea.Msg {
		defer r.wg.Done()
		defer cancel()
		var err error
		if op == "continue" {
			err = eng.Continue(ctx)
		} else {
			_, err = eng.Next(ctx)
		}
		// After the run's events, on the same channel (never dropped).
		ch <- runDoneMsg{op: op, err: err}
		return nil
	}
	return tea.Batch(work, m.spin.Tick)
}

func (m *model) runDone(msg runDoneMsg) tea.Cmd {
	m.running.busy, m.running.id, m.running.method = false, 0, ""
	m.run.setCancel(nil)
	if m.flash == flashCancelling || m.flash == flashBusy {
		m.flash = ""
	}
	m.refresh()
	if m.lastID > 0 {
		m.selectStep(m.lastID)
	}
	if m.ui == uiQuitting {
		return tea.Quit
	}
	switch {
	case msg.err == nil, errors.Is(msg.err, context.Canceled):
	case errors.Is(msg.err, steps.ErrNoStep):
		m.flash = "nothing left to run"
	default:
		m.flash = "error: " + msg.err.Error()
	}
	return nil
}

// key handles one keypress: ctrl+c always, then the mode's own keys.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQ) {
		m.result.Teardown, m.result.Interrupted = true, true
		return m.quit()
	}
	switch m.ui {
	case uiConfirm:
		return m.confirmKey(k)
	case uiHelp:
		m.ui = uiBrowse
		if key.Matches(k, m.keys.Quit) {
			return m.askQuit()
		}
		return nil
	case uiGoto:
		m.gotoKey(k)
		return nil
	}
	m.flash = ""
	if m.replay != nil {
		if cmd, ok := m.replayKey(k); ok {
			return cmd
		}
	}
	return m.browseKey(k)
}

// confirmKey answers the quit prompt.
func (m *model) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.ckeys.Yes):
		m.result.Teardown = true
		return m.quit()
	case key.Matches(k, m.ckeys.No):
		m.result.Teardown = false
		return m.quit()
	case key.Matches(k, m.ckeys.Accept):
		m.result.Teardown = !m.opts.Keep
		return m.quit()
	case key.Matches(k, m.ckeys.Back):
		m.ui = uiBrowse
	}
	return nil
}

// askQuit is q: the quit prompt; a replay, with nothing to tear down, quits at once.
func (m *model) askQuit() tea.Cmd {
	if m.replay != nil {
		m.result.Teardown = false
		return m.quit()
	}
	m.ui = uiConfirm
	return nil
}

// browseKey handles the keys of the usual mode (live, and a replay's
// keys that work as live).
func (m *model) browseKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Help):
		if m.ui == uiBrowse {
			m.ui = uiHelp
		}
	case key.Matches(k, m.keys.Quit):
		if m.ui == uiBrowse {
			return m.askQuit()
		}
	case key.Matches(k, m.keys.Cancel):
		if m.running.busy {
			m.run.cancelRun()
			m.flash = flashCancelling
		}
	case key.Matches(k, m.keys.Next):
		if why := m.cannotRun(); why != "" {
			m.flash = why
			return nil
		}
		return m.start("next")
	case key.Matches(k, m.keys.Continue):
		if why := m.cannotRun(); why != "" {
			m.flash = why
			return nil
		}
		return m.start("continue")
	case key.Matches(k, m.keys.Retry):
		if m.running.busy {
			m.flash = flashBusy
			return nil
		}
		if err := m.eng.Retry(); err != nil {
			m.flash = err.Error()
			return nil
		}
		m.refresh()
		return m.start("retry")
	case key.Matches(k, m.keys.Break):
		m.toggleBreak()
	case key.Matches(k, m.keys.Timeline):
		m.screen, m.tl.top = m.screen.toggle(), -1
	case m.screen == screenTimeline && m.tl.scroll(k, m.timeline(), max(1, m.layout().bodyH-3)):
	case key.Matches(k, m.keys.Tab):
		m.pane.mode = (m.pane.mode + 1) % 3
		m.pane.scroll = 0
		m.loadLog()
	case key.Matches(k, m.keys.Up):
		m.moveCursor(-1)
	case key.Matches(k, m.keys.Down):
		m.moveCursor(1)
	case key.Matches(k, m.keys.PgUp):
		m.pane.scroll -= max(1, m.layout().stepH-2)
		if m.pane.scroll < 0 {
			m.pane.scroll = 0
		}
	case key.Matches(k, m.keys.PgDown):
		m.pane.scroll += max(1, m.layout().stepH-2)
	}
	return nil
}

// cannotRun says why Next/Continue cannot run now, or "".
func (m *model) cannotRun() string {
	switch {
	case m.running.busy:
		return flashBusy
	case m.failedStep() != nil:
		s := m.failedStep()
		return fmt.Sprintf("step %d %s failed: r retries it, q quits", s.ID, s.Name)
	case m.nextID == 0:
		return "all steps done: q quits (and tears the pod down)"
	}
	return ""
}

func (m *model) failedStep() *steps.Step {
	if m.running.busy {
		return nil
	}
	// The engine's failed step, not any step shown failed: a failure the
	// kubelet recovers from (a container exit followed by its restart) is
	// shown failed but the run goes on.
	f, failed := m.eng.Failed()
	if !failed {
		return nil
	}
	return &f
}

// quit ends the program, once a running call has been cancelled and returned.
func (m *model) quit() tea.Cmd {
	m.decided, m.ui = true, uiBrowse
	if m.running.busy {
		m.ui = uiQuitting
		m.run.cancelRun()
		return nil
	}
	return tea.Quit
}

func (m *model) moveCursor(d int) {
	n := m.plan.cursor + d
	if n < 0 || n >= len(m.plan.rows) {
		return
	}
	m.plan.cursor = n
	m.pane.scroll = 0
	m.loadLog()
}

func (m *model) toggleBreak() {
	r, ok := m.plan.cursorRow()
	if !ok {
		return
	}
	if r.step < 0 {
		m.plan.stageBreak[r.stage] = m.eng.ToggleBreakStage(r.stage)
		return
	}
	id := m.steps[r.step].ID
	m.plan.stepBreak[id] = m.eng.ToggleBreakStep(id)
}

// breakAt reports whether a breakpoint stops before the step at index i.
func (m *planModel) breakAt(all []steps.Step, i int) bool {
	s := all[i]
	if m.stepBreak[s.ID] {
		return true
	}
	return m.stageBreak[s.Stage] && (i == 0 || all[i-1].Stage != s.Stage)
}
