// Package tui is podstep's interactive frontend: a bubbletea v2 program that
// runs the engine one step per keypress and shows, side by side, the plan,
// the selected step (what the kubelet does, the function it mirrors, the
// exact CRI requests and their responses), the pod's status as kubectl would
// print it, and the kubelet's events or a container's log.
//
// The TUI drives an Engine, the methods it needs of a *steps.Engine, so that
// something else (a recording) can stand in. The engine is synchronous; the
// TUI runs each Next or Continue in a command (its own goroutine) with a
// cancellable context, and subscribes to the engine's events: they go into
// a channel that a re-armed command turns into messages, so the UI never
// blocks on the runtime, nor the engine on the UI.
//
// What a step changed is the engine's diff (steps.Step.Changes and Events,
// taken from its StepDone): the pod pane highlights it, the events pane
// marks the step's events, and the step pane says it in words for a reader
// who cannot see the colour. The TUI diffs nothing itself.
//
// Shape: a small root model (model.go: state and messages; route.go:
// which keys go where; view.go: the layout) with a mode enum for what the
// keys do (mode.go: browse, help, confirm, goto, quitting) and a screen
// enum for what the body shows (panes or timeline). Each pane is a
// sub-model with its own state and a view(runView, w, h): plan (plan.go),
// step (step.go), pod (pod.go), events and log (events.go), the run under
// way and a Live engine's changes (live.go), the timeline (timeline.go),
// the help screen (help.go), the replay (replay.go, nil when live) and
// the cluster's view of a --pod run (cluster.go, read in a command) and
// predict mode (predict.go: a question before each step, built and graded
// by internal/predict; an open question takes the step pane's rows and
// comes before every key but ctrl+c; a verdict too long for its rows
// scrolls with pgdn/pgup). The teardown (route.go's beginTeardown: q's
// prompt plans it and its steps run as creation's do) shows in the pod
// pane through teardown.go, which reads the teardown steps' states (the
// engine's pod status stops at creation).
// runView (runview.go) is what the panes read of the run, built once per
// frame; the sub-models share a context (common: sizes, styles, key
// maps, clock). Every key binding is in keys.go, every message type in
// msgs.go.
package tui
