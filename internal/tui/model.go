package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// model is the root bubbletea model. It is used through a pointer: the
// engine runner shares its WaitGroup with Run.
type model struct {
	eng  Engine
	opts Options
	ctx  context.Context
	*common
	help help.Model

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
	node   nodeNote   // what the node is stuck on (NodeNoter), under the header
	ver    int        // bumped whenever steps change (detail cache key)

	// The panes' sub-models (plan.go, step.go, pod.go, events.go), the
	// run under way (live.go), the timeline (timeline.go) and, in a
	// replay only, the replay's (replay.go; nil when live).
	plan   planModel
	pane   stepModel
	podP   podModel
	evs    eventsModel
	live   liveModel
	tl     timelineModel
	helpS  helpModel
	replay *replayModel
	// clus is the cluster's view of the real pod (cluster.go; its src is
	// nil without a cluster).
	clus clusterModel
	// pred is predict mode (predict.go; off unless Options.Predict).
	pred predictModel

	run *runner

	// ui is what the keys do now (mode.go); screen what the body shows.
	ui      uiMode
	screen  screen
	decided bool // the user chose how to quit
	// tearing: the user chose to tear the pod down in the TUI; the
	// teardown steps are in the plan (beginTeardown).
	tearing bool
	result  Result
	flash   string
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
		plan: planModel{common: c, stageBreak: map[steps.Stage]bool{}, stepBreak: map[int]bool{}},
		pane: stepModel{common: c}, podP: podModel{common: c}, evs: eventsModel{common: c},
		live: newLiveModel(c, eng),
		run:  &runner{},
		tl:   timelineModel{common: c, top: -1}, helpS: helpModel{common: c},
		clus: clusterModel{common: c, src: o.Cluster},
		pred: predictModel{common: c, on: o.Predict, sc: o.Scenario},
	}
	if rp, ok := eng.(Replayer); ok {
		m.replay = &replayModel{common: c, rp: rp, info: o.Replay}
		m.pred.on = false // a replay's TUI does not ask (replay --predict is --auto)
	}
	for _, s := range o.Breaks {
		if !m.plan.stageBreak[s] {
			m.plan.stageBreak[s] = eng.ToggleBreakStage(s)
		}
	}
	var unmatched []string
	for _, p := range o.BreakSteps {
		found := false
		for _, s := range eng.Steps() {
			if steps.MatchName(p, s.Name) {
				found = true
				if !m.plan.stepBreak[s.ID] {
					m.plan.stepBreak[s.ID] = eng.ToggleBreakStep(s.ID)
				}
			}
		}
		if !found {
			unmatched = append(unmatched, p)
		}
	}
	if len(unmatched) > 0 {
		m.flash = fmt.Sprintf("--break %s: no step of this pod has that name (the plan pane lists them)", strings.Join(unmatched, ","))
	}
	m.subscribe()
	m.refresh()
	m.selectStep(m.nextID)
	return m
}

// Init starts listening to the engine.
// The cluster's view of the pod is read at the start (in a command).
func (m *model) Init() tea.Cmd {
	return tea.Batch(m.waitEvent(), m.waitLoaded(), m.live.wait(), m.clus.fetch(m.ctx))
}

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
	if n, ok := m.eng.(NodeNoter); ok {
		m.node.line, m.node.severe = n.NodeNote()
	}
	m.nextID = 0
	s, ok := m.eng.NextStep()
	if ok {
		m.nextID = s.ID
	}
	m.pred.ask(s, ok && m.failedStep() == nil, m.pod.Display)
	m.ver++
	m.plan.buildRows(m.steps)
	if id > 0 {
		m.selectStep(id)
	}
	m.loadLog()
}

// loadLog reads the log the events pane shows in log mode.
func (m *model) loadLog() {
	if m.pane.mode == modeLog {
		m.evs.load(m.eng, m.view())
	}
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

// known says whether s is in the plan as the TUI read it last: a
// restart inserts steps while a run goes on (steps.Engine.scheduleRestart),
// and a later step of the same run is then new to it.
func (m *model) known(s steps.Step) bool {
	return s.ID >= 1 && s.ID <= len(m.steps) && m.steps[s.ID-1].Name == s.Name
}

// replan re-reads the plan while a run goes on: eng.Steps() does not
// rebuild requests then, and the pod stays as the events said it.
func (m *model) replan() {
	var id int
	if r, ok := m.plan.cursorRow(); ok && r.step >= 0 {
		id = m.steps[r.step].ID
	}
	m.steps = cleanSteps(m.eng.Steps())
	m.ver++
	m.plan.buildRows(m.steps)
	if id > 0 {
		m.selectStep(id)
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
		// The events queued meanwhile, up to a run's end, in this one
		// update: one frame for them all, so that a busy machine's
		// frames do not fall behind the engine (a back-off's countdown
		// shown after it ended).
		for range maxBatch {
			select {
			case next := <-m.events:
				switch next := next.(type) {
				case engineEventMsg:
					m.event(next.ev)
					continue
				case runDoneMsg:
					return m, tea.Batch(m.runDone(next), m.waitEvent())
				}
			default:
			}
			break
		}
		cmd := m.waitEvent()
		return m, cmd
	case runDoneMsg:
		return m, tea.Batch(m.runDone(msg), m.waitEvent())
	case liveMsg:
		cmd := m.changed()
		return m, cmd
	case spinner.TickMsg:
		cmd := m.live.tick(msg)
		return m, cmd
	case clusterMsg:
		cmd := m.clus.got(m.ctx, msg)
		return m, cmd
	}
	return m, nil
}

// maxBatch bounds the events one update applies.
const maxBatch = 256

// event applies one engine event while a step runs.
func (m *model) event(ev steps.Event) {
	switch ev.Kind {
	case steps.StepStarted:
		m.last = lastChange{}
		m.live.running.id = ev.Step.ID
		m.live.running.method = ""
		m.live.running.wait = nil
		if !m.known(ev.Step) {
			m.replan()
		}
		m.setStep(ev.Step)
		m.selectStep(ev.Step.ID)
	case steps.CallSent:
		m.live.running.method = line(ev.Method)
	case steps.CallDone:
		m.live.running.method = ""
		if ev.Step.ID > 0 {
			m.setStep(ev.Step)
		}
	case steps.Waiting:
		if ev.Wait != nil {
			m.live.running.wait, m.live.running.waitFrom = ev.Wait, m.now()
		}
	case steps.StepDone:
		m.live.running.wait = nil
		m.setStep(ev.Step)
		if ev.Pod != nil {
			m.pod = *ev.Pod
			m.last = newLastChange(ev.Step, len(ev.Pod.Events))
		}
		m.lastID = ev.Step.ID
		m.live.running.id = 0
		m.pred.observe(ev)
	}
}

// Messages that stop being true once the run ends.
const (
	flashCancelling = "cancelling the running call…"
	flashBusy       = "a step is running: esc cancels it"
)

// start runs op ("next", "continue" or "retry") in a command.
func (m *model) start(op string) tea.Cmd {
	parent := m.ctx
	if m.tearing {
		// Teardown must run after a signal too (steps.Engine.Teardown):
		// only a second ctrl+c cancels a teardown step (key).
		parent = context.WithoutCancel(m.ctx)
	}
	ctx, cancel := context.WithCancel(parent)
	m.run.setCancel(cancel)
	m.live.running = running{busy: true, op: op, start: m.now()}
	m.flash = ""
	if s, ok := m.eng.NextStep(); ok {
		m.live.running.id = s.ID
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
	return tea.Batch(work, m.live.spin.Tick)
}

func (m *model) runDone(msg runDoneMsg) tea.Cmd {
	m.live.running = running{}
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
	if m.nextID == 0 || m.failedStep() != nil {
		// The run's end: what does the cluster say now?
		return m.clus.fetch(m.ctx)
	}
	return nil
}
